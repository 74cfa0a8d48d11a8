-- Configuration of smith.nvim: the documented defaults and the merged
-- options that every other module reads through `config.options`.
local M = {}

M.defaults = {
  -- The command line that starts the daemon. A list of strings, or a
  -- function(root) returning one (to pick flags per workspace).
  cmd = { 'smith', 'serve' },
  -- Extra environment for the daemon, e.g. { SMITH_TOKEN = '...' }.
  cmd_env = nil,
  -- initializationOptions sent to the daemon: upstream, dialect, stateDir,
  -- idleTimeout, maxTurns, maxMessage, autoApply (docs/protocol.md). Flags
  -- in `cmd` win over these.
  init_options = nil,
  -- A workspace root is the nearest directory (from the current file, or
  -- the working directory) holding one of these; else the working directory.
  root_markers = { '.smith.toml', '.agentsmithy', '.git' },
  -- Attach the smith client to file buffers of the workspace so that smith
  -- sees unsaved text and applies accepted hunks to the buffer itself.
  attach_buffers = true,
  -- After smith edited an open buffer (accept, reject of an applied hunk,
  -- undo), write it so that the buffer and the file on disk agree.
  write_after_apply = true,
  -- Milliseconds to wait for the daemon to initialize, and for short requests
  -- made synchronously (health check, tests).
  timeout = 10000,
  chat = {
    -- Where the chat buffer opens: 'right', 'left', 'below', 'above', 'tab'
    -- or 'current'.
    position = 'right',
    -- Width (columns, or a fraction of the editor) for right/left, height
    -- (lines or fraction) for below/above.
    size = 0.4,
    -- Show reasoning in the chat buffer, folded.
    show_reasoning = true,
    -- Show tool calls and results as one line each.
    show_tools = true,
    -- Open the change preview when a turn proposed changes.
    preview_changes = false,
  },
  -- Buffer-local keymaps. Set one to false to leave it unmapped.
  keymaps = {
    chat = {
      close = 'q',
      cancel = '<C-c>',
      changes = 'gc',
      send = 'i',
    },
    preview = {
      accept_hunk = 'a',
      reject_hunk = 'r',
      accept_all = 'A',
      reject_all = 'R',
      next_hunk = ']c',
      prev_hunk = '[c',
      open_file = '<CR>',
      next_change = ']f',
      prev_change = '[f',
      refresh = 'gr',
      close = 'q',
    },
  },
}

M.options = vim.deepcopy(M.defaults)

--- Merges user options over the defaults. Tables merge deeply, but lists
--- (`cmd`, `root_markers`) replace the default as a whole.
function M.set(opts)
  opts = opts or {}
  local merged = vim.tbl_deep_extend('force', vim.deepcopy(M.defaults), opts)
  for _, key in ipairs({ 'cmd', 'root_markers' }) do
    if opts[key] ~= nil then
      merged[key] = opts[key]
    end
  end
  M.options = merged
  return merged
end

return M
