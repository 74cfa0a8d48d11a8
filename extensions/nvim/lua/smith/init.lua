-- smith.nvim: a thin Neovim client of `smith serve`.
--
-- smith does the work (the upstream stream, the dialects, diff matching,
-- applying, undo); this plugin starts one daemon per workspace root through
-- Neovim's LSP client, draws the chat and the change previews, and sends the
-- user's decisions back. See :help smith.
local config = require('smith.config')
local client = require('smith.client')
local chat = require('smith.chat')
local changes = require('smith.changes')
local dialogs = require('smith.dialogs')
local util = require('smith.util')

local M = {}

local api = vim.api

-- Hooks for tests and integrations: called with (session, params).
M.hooks = {}

local function call_hook(name, ...)
  local fn = M.hooks[name]
  if fn then
    pcall(fn, ...)
  end
end

--- Returns the session of root (default: the current buffer's workspace),
--- starting the daemon when needed. Reports and returns nil on failure.
function M.session(root)
  root = root or client.root_for()
  local s, err = client.ensure(root)
  if not s then
    vim.notify(err, vim.log.levels.ERROR)
  end
  return s
end

client.on_notification.event = function(session, params)
  local ev = params.event or params
  local turn = session.turn
  if turn then
    turn.turn_id = turn.turn_id or params.turnId
    if params.turnId and turn.turn_id ~= params.turnId then
      return
    end
    if params.dialogId then
      session.dialog_id = params.dialogId
      turn.dialog_id = params.dialogId
    end
    turn.events = turn.events + 1
    if session.status == 'running' then
      session.status = 'streaming'
      util.redraw_status()
    end
  elseif params.dialogId and session.dialog_id and params.dialogId ~= session.dialog_id then
    return
  end
  chat.render(session, ev)
  call_hook('event', session, params)
end

client.on_notification.changeUpdated = function(session, params)
  changes.on_updated(session, params)
  call_hook('changeUpdated', session, params)
end

client.on_notification.fileChanged = function(session, params)
  local path = params.uri and params.uri ~= '' and vim.uri_to_fname(params.uri) or params.path
  if path and path ~= '' then
    local abs = util.normalize(util.join(session.root, path))
    local buf = util.find_buf(abs)
    if buf then
      util.reload_buf(buf, abs)
    end
  end
  call_hook('fileChanged', session, params)
end

-- The editor context of a turn: the current file and the selected lines.
-- Positions are in the negotiated encoding (UTF-16 unless smith chose
-- UTF-8), so the end column of the last line is counted in it.
local function context_of(buf, range, encoding)
  if vim.bo[buf].buftype ~= '' then
    return nil
  end
  local name = api.nvim_buf_get_name(buf)
  if name == '' then
    return nil
  end
  local ctx = { uri = vim.uri_from_bufnr(buf) }
  if range then
    local last = api.nvim_buf_get_lines(buf, range[2] - 1, range[2], false)[1] or ''
    ctx.selection = {
      start = { line = range[1] - 1, character = 0 },
      ['end'] = { line = range[2] - 1, character = util.columns(last, encoding) },
    }
  end
  return ctx
end

local function finish_turn(session, turn, err, result)
  if session.turn ~= turn then
    return
  end
  session.turn = nil
  local outcome, errmsg
  if err then
    -- -32800 is LSP's RequestCancelled.
    outcome = (err.code == -32800 or turn.cancel_requested) and 'cancelled' or 'error'
    if outcome == 'error' then
      errmsg = util.errmsg(err)
      util.error('smith: the turn failed: %s', errmsg)
    end
    -- smith/chat puts the ended turn, when there is one, in the error's data.
    if type(err.data) == 'table' and type(err.data.dialogId) == 'string' and err.data.dialogId ~= '' then
      session.dialog_id = err.data.dialogId
    end
  else
    outcome = result and result.outcome or 'completed'
    if result and result.dialogId then
      session.dialog_id = result.dialogId
    end
  end
  local nchanges = result and type(result.changes) == 'table' and #result.changes or 0
  session.last_outcome = outcome
  session.status = outcome == 'completed' and 'idle' or outcome
  chat.end_turn(session, outcome, nchanges, errmsg)
  changes.refresh_count(session, function()
    if nchanges > 0 and config.options.chat.preview_changes then
      changes.preview(session, result.changes[1])
    end
  end)
  util.redraw_status()
  call_hook('turnEnd', session, result, err)
end

--- Sends one chat turn. opts: { root?, buf?, range? = {l1, l2} }.
--- Returns the session, or nil when the turn could not start.
function M.chat(message, opts)
  opts = opts or {}
  if not message or vim.trim(message) == '' then
    vim.notify('smith: the message is empty; usage :Smith {message}', vim.log.levels.WARN)
    return nil
  end
  local buf = opts.buf or api.nvim_get_current_buf()
  local session = M.session(opts.root or client.root_for(buf))
  if not session then
    return nil
  end
  if session.turn then
    vim.notify('smith: a turn is already running in this workspace; :SmithCancel stops it', vim.log.levels.WARN)
    return nil
  end
  local encoding = session.client and session.client.offset_encoding or 'utf-16'
  local params = { message = message, dialogId = session.dialog_id, context = context_of(buf, opts.range, encoding) }
  chat.open(session)
  chat.begin_turn(session, message)
  local turn = { events = 0, dialog_id = session.dialog_id, message = message }
  session.turn = turn
  session.status = 'running'
  util.redraw_status()
  turn.on_exit = function()
    finish_turn(session, turn, { message = 'smith serve exited during the turn' })
  end
  session:request('smith/chat', params, function(err, result)
    finish_turn(session, turn, err, result)
  end, function(id)
    turn.request_id = id
    if turn.cancel_requested then
      session:cancel(id)
    end
  end)
  return session
end

--- Cancels the running turn of a workspace ($/cancelRequest).
function M.cancel(root)
  local session = client.get(root or client.root_for())
  if not session or not session.turn then
    vim.notify('smith: no turn is running', vim.log.levels.INFO)
    return false
  end
  local turn = session.turn
  turn.cancel_requested = true
  session.status = 'cancelling'
  util.redraw_status()
  if turn.request_id then
    session:cancel(turn.request_id)
  end
  return true
end

--- Asks for a message with vim.ui.input and sends it.
function M.prompt(root)
  vim.ui.input({ prompt = 'smith> ' }, function(msg)
    if msg and vim.trim(msg) ~= '' then
      M.chat(msg, { root = root })
    end
  end)
end

--- Opens the chat buffer of the workspace.
function M.open_chat(root)
  local session = M.session(root)
  if session then
    chat.open(session, true)
  end
  return session
end

--- Lists the changes to review in the quickfix list and previews the first.
function M.changes(root)
  local session = M.session(root)
  if session then
    changes.show_list(session, true)
  end
end

--- Previews a change: by id, else the quickfix entry under the cursor, else
--- the first change to review.
function M.preview(change_id, root, cb)
  local session = M.session(root)
  if not session then
    return
  end
  change_id = change_id or changes.change_under_cursor()
  if change_id then
    changes.preview(session, change_id, cb)
    return
  end
  changes.reviewable(session, function(list, err)
    if not list then
      util.error('smith: listing changes failed: %s', util.errmsg(err))
    elseif #list == 0 then
      util.info('smith: no changes to review')
    else
      changes.preview(session, list[1].id, cb)
    end
  end)
end

--- Undoes a change (the last applied one when change_id is nil).
function M.undo(change_id, root, cb)
  local session = M.session(root)
  if not session then
    return
  end
  local params = {}
  if change_id and change_id ~= '' then
    params.changeId = change_id
  end
  session:request('smith/undo', params, function(err, result)
    if err then
      util.error('smith: undo failed: %s', util.errmsg(err))
    else
      util.info('smith: undone')
    end
    changes.refresh_count(session)
    if cb then
      cb(err, result)
    end
  end)
end

--- AgentSmithy's session of the current dialog: what the server wrote
--- itself and has not had approved. action is nil (list the files),
--- 'approve' or 'reset' (which asks first unless opts.force). cb(err,
--- result) gets the server's answer.
function M.session_action(action, opts, cb)
  opts = opts or {}
  local session = M.session(opts.root)
  if not session then
    return
  end
  local method = ({ approve = 'smith/session/approve', reset = 'smith/session/reset' })[action or '']
  if action and not method then
    util.error('smith: unknown session action %q (use approve or reset)', action)
    return
  end
  if action == 'reset' and not opts.force then
    local ok = vim.fn.confirm(
      'smith: reset gives up every unapproved write of the server in this dialog (the server keeps a checkpoint). Go ahead?',
      '&Yes\n&No',
      2
    )
    if ok ~= 1 then
      return
    end
  end
  session:request(method or 'smith/session', {}, function(err, result)
    if err then
      util.error('smith: session%s failed: %s', action and (' ' .. action) or '', util.errmsg(err))
    elseif not action then
      local files = result and result.changed_files or {}
      if #files == 0 then
        util.info('smith: nothing unapproved in this dialog')
      else
        local lines = { string.format('smith: %d unapproved file(s) (:SmithSession approve, :SmithSession reset):', #files) }
        for _, f in ipairs(files) do
          table.insert(lines, string.format('  %s %s (+%d -%d)', (f.status or '?'):sub(1, 1):upper(), f.path, f.additions or 0, f.deletions or 0))
        end
        util.info('%s', table.concat(lines, '\n'))
      end
    elseif action == 'approve' then
      util.info('smith: approved %d checkpoint(s)', result and result.commits_approved or 0)
    else
      util.info('smith: reset; the discarded writes are kept as checkpoint %s', tostring(result and result.pre_reset_checkpoint))
    end
    if cb then
      cb(err, result)
    end
  end)
end

--- The :SmithDialogs picker.
function M.dialogs(root)
  local session = M.session(root)
  if session then
    dialogs.pick(session)
  end
end

--- The state of the current workspace's daemon, for custom status lines:
--- { state = 'off'|'starting'|'idle'|'running'|'streaming'|'cancelling'|
---   'cancelled'|'error'|'interrupted', pending = n, dialog = id|nil }.
function M.state(root)
  if not client.any() then
    return { state = 'off', pending = 0 }
  end
  local s = client.get(root or client.root_for())
  if not s then
    return { state = 'off', pending = 0 }
  end
  return { state = s.status, pending = s.pending or 0, dialog = s.dialog_id }
end

--- A short status line item: "smith: idle", "smith: streaming",
--- "smith: idle · 2 pending"; '' when no daemon runs for the workspace.
function M.status(root)
  local st = M.state(root)
  if st.state == 'off' then
    return ''
  end
  local s = 'smith: ' .. st.state
  if st.pending > 0 then
    s = s .. ' · ' .. st.pending .. ' pending'
  end
  return s
end

--- Stops the daemons (all, or the one of root).
function M.stop(root)
  if root then
    local s = client.get(root)
    if s then
      s:stop()
    end
  else
    client.stop_all()
  end
end

local augroup

--- Configures smith.nvim; see :help smith-config. Safe to call again.
function M.setup(opts)
  config.set(opts)
  augroup = api.nvim_create_augroup('smith', { clear = true })
  api.nvim_create_autocmd({ 'BufReadPost', 'BufNewFile', 'BufFilePost' }, {
    group = augroup,
    callback = function(args)
      client.maybe_attach(args.buf)
    end,
  })
  api.nvim_create_autocmd('VimLeavePre', {
    group = augroup,
    callback = function()
      client.stop_all()
    end,
  })
  return M
end

-- Lets the :Smith* commands work without an explicit setup() call.
function M._ensure_setup()
  if not augroup then
    M.setup({})
  end
end

return M
