-- One `smith serve` per workspace root, driven through Neovim's built-in LSP
-- client: that client frames JSON-RPC, tracks buffer versions, sends
-- didOpen/didChange for attached buffers and applies `workspace/applyEdit`
-- to buffers with normal undo. This module only starts, finds and stops the
-- daemons and queues requests until `initialize` has been answered.
--
-- Written against the Neovim 0.7 API (vim.lsp.start_client and
-- buf_attach_client) so that it runs on Debian's Neovim as well as on
-- current releases.
local config = require('smith.config')
local util = require('smith.util')

local M = {}

local uv = vim.uv or vim.loop

-- Neovim 0.11 made the client's functions methods (client:request()) and
-- replaced vim.lsp.start_client with vim.lsp.start(config, {attach=false}).
local has_011 = vim.fn.has('nvim-0.11') == 1

local function invoke(client, name, ...)
  if has_011 then
    return client[name](client, ...)
  end
  return client[name](...)
end

local function start_client(cfg)
  if has_011 then
    return vim.lsp.start(cfg, {
      attach = false,
      reuse_client = function()
        return false
      end,
    })
  end
  return vim.lsp.start_client(cfg)
end

-- root -> session; client_id -> session; start directory -> root.
local sessions = {}
local by_client = {}

--- Ends a session whose daemon could not start (its initialize failed):
--- the process would stay up unused and whatever waits for the client (a
--- turn) would wait for ever. The waiters get msg; the process is stopped.
--- Safe in a libuv callback: only plain state changes before vim.schedule.
local function fail_start(s, msg)
  if s.initialized or s.stopped then
    return
  end
  s.stopped = true
  s.stopping = true -- its exit is ours, not news
  s.status = 'off'
  if sessions[s.root] == s then
    sessions[s.root] = nil
  end
  vim.schedule(function()
    local waiters = s.waiters
    s.waiters = {}
    for _, fn in ipairs(waiters) do
      fn(nil, msg)
    end
    if s.client_id then
      vim.lsp.stop_client(s.client_id, true)
    end
    util.redraw_status()
  end)
end
local root_cache = {}

-- Notification handlers, set by init.lua (event, changeUpdated, fileChanged).
M.on_notification = {}

local Session = {}
Session.__index = Session

--- Returns the workspace root for a buffer: the nearest ancestor of its file
--- that holds a root marker, else the working directory.
function M.root_for(bufnr)
  bufnr = bufnr or vim.api.nvim_get_current_buf()
  -- smith's own buffers (chat, preview) belong to the root they were made for.
  local ok, own = pcall(vim.api.nvim_buf_get_var, bufnr, 'smith_root')
  if ok and type(own) == 'string' and own ~= '' then
    return own
  end
  local cwd = uv.cwd()
  local name = vim.api.nvim_buf_get_name(bufnr)
  local start = cwd
  if name ~= '' and vim.bo[bufnr].buftype == '' and not name:match('^%a[%w+.-]*://') then
    start = vim.fn.fnamemodify(name, ':p:h')
  end
  -- The status line asks on every redraw: remember the roots found by a
  -- marker (markers seldom go away; a miss is looked up again).
  local key = start .. '\0' .. table.concat(config.options.root_markers, '\0')
  if root_cache[key] then
    return root_cache[key]
  end
  local dir = util.normalize(start)
  while dir do
    for _, marker in ipairs(config.options.root_markers) do
      if uv.fs_stat(dir .. '/' .. marker) then
        root_cache[key] = dir
        return dir
      end
    end
    local parent = vim.fn.fnamemodify(dir, ':h')
    if parent == dir then
      break
    end
    dir = parent
  end
  return util.normalize(cwd)
end

local function resolve_cmd(root)
  local cmd = config.options.cmd
  if type(cmd) == 'function' then
    cmd = cmd(root)
  end
  if type(cmd) == 'string' then
    cmd = { cmd }
  end
  if type(cmd) ~= 'table' or #cmd == 0 then
    return nil, "smith: setup{cmd=...} must be a non-empty list such as {'smith', 'serve'}"
  end
  if vim.fn.executable(cmd[1]) ~= 1 then
    return nil, string.format(
      "smith: cannot start the daemon: '%s' is not an executable on PATH. "
        .. "Install smith (in a checkout of the smith repository: CGO_ENABLED=0 go install ./cmd/smith, "
        .. "with $(go env GOPATH)/bin on PATH) "
        .. "or point setup{cmd = {'/path/to/smith', 'serve'}} at it.",
      cmd[1]
    )
  end
  return cmd
end

--- Whether any daemon is running or starting.
function M.any()
  return next(sessions) ~= nil
end

--- The session of a root (no start).
function M.get(root)
  return sessions[root]
end

local function make_handlers()
  local handlers = {}
  for _, name in ipairs({ 'event', 'changeUpdated', 'fileChanged' }) do
    handlers['smith/' .. name] = function(_, params, ctx)
      local s = by_client[ctx.client_id]
      local fn = M.on_notification[name]
      if s and fn then
        local ok, err = pcall(fn, s, params or {})
        if not ok then
          util.error('smith: handling smith/%s failed: %s', name, err)
        end
      end
    end
  end
  -- An error shown before initialize has answered is the daemon saying why
  -- it cannot start (smith sends it with the failed initialize).
  local show = vim.lsp.handlers['window/showMessage']
  handlers['window/showMessage'] = function(err, params, ctx, cfg)
    local s = by_client[ctx.client_id]
    if s and not s.initialized and params and params.type == vim.lsp.protocol.MessageType.Error then
      fail_start(s, params.message)
    end
    if show then
      return show(err, params, ctx, cfg)
    end
  end
  -- Neovim applies the edit itself (with normal undo). Afterwards the buffers
  -- that had no unsaved changes before are written, so that buffer and disk
  -- hold the same text; a buffer the user was editing is left for them to
  -- save (writing it would save their unrelated edits too).
  local apply = vim.lsp.handlers['workspace/applyEdit']
  handlers['workspace/applyEdit'] = apply and function(err, params, ctx, cfg)
    local s = by_client[ctx.client_id]
    local clean = {}
    if s and config.options.write_after_apply then
      local edit = params and params.edit or {}
      local uris = {}
      for _, dc in ipairs(edit.documentChanges or {}) do
        -- Text edits only: a created file gets its text as a text edit too,
        -- and a deleted one has no buffer left to write.
        if dc.textDocument and dc.textDocument.uri then
          table.insert(uris, dc.textDocument.uri)
        end
      end
      for uri in pairs(edit.changes or {}) do
        table.insert(uris, uri)
      end
      for _, uri in ipairs(uris) do
        local buf = vim.uri_to_bufnr(uri)
        if not (vim.api.nvim_buf_is_loaded(buf) and vim.bo[buf].modified) then
          table.insert(clean, buf)
        end
      end
    end
    local res = apply(err, params, ctx, cfg)
    if s and res and res.applied and #clean > 0 then
      vim.schedule(function()
        for _, buf in ipairs(clean) do
          util.write_buf(buf)
        end
      end)
    end
    return res
  end
  return handlers
end

--- Returns the running session for root, starting `smith serve` if needed.
--- Returns nil and an error message when the daemon cannot be started.
function M.ensure(root)
  local s = sessions[root]
  if s and not s.stopped then
    return s
  end
  local cmd, err = resolve_cmd(root)
  if not cmd then
    return nil, err
  end
  s = setmetatable({
    root = root,
    initialized = false,
    waiters = {},
    turn = nil,
    dialog_id = nil,
    pending = 0,
    status = 'starting',
  }, Session)
  local capabilities = vim.lsp.protocol.make_client_capabilities()
  capabilities.workspace = capabilities.workspace or {}
  capabilities.workspace.applyEdit = true
  capabilities.workspace.workspaceEdit = capabilities.workspace.workspaceEdit or {}
  capabilities.workspace.workspaceEdit.documentChanges = true
  local id = start_client({
    name = 'smith',
    cmd = cmd,
    cmd_env = config.options.cmd_env,
    cmd_cwd = root,
    root_dir = root,
    workspace_folders = { { uri = vim.uri_from_fname(root), name = root } },
    capabilities = capabilities,
    init_options = config.options.init_options,
    handlers = make_handlers(),
    flags = { allow_incremental_sync = true, debounce_text_changes = 0 },
    on_init = function(client, result)
      -- Neovim 0.7 reads only the clangd-style offsetEncoding; honour the
      -- LSP 3.17 positionEncoding that smith answers with.
      local enc = result and result.capabilities and result.capabilities.positionEncoding
      if type(enc) == 'string' then
        client.offset_encoding = enc
      end
      s.client = client
      s.initialized = true
      if s.status == 'starting' then
        s.status = 'idle'
      end
      local waiters = s.waiters
      s.waiters = {}
      for _, fn in ipairs(waiters) do
        fn(client)
      end
      util.redraw_status()
    end,
    on_error = function(_, err)
      -- Before initialize has answered, an error is initialize failing
      -- (Neovim 0.10+ reports INITIALIZE_ERROR; 0.7 raises it where it
      -- cannot be caught, and the daemon's window/showMessage is what
      -- tells us there).
      if not s.initialized then
        local msg = tostring(err)
        fail_start(s, msg:match('message = "(.-)"') or msg)
      end
    end,
    on_exit = function(code, signal)
      -- Runs in a libuv callback where most of the API is off limits: only
      -- plain state changes here, the rest on the main loop.
      s.stopped = true
      s.initialized = false
      s.status = 'off'
      if sessions[root] == s then
        sessions[root] = nil
      end
      vim.schedule(function()
        local waiters = s.waiters
        s.waiters = {}
        for _, fn in ipairs(waiters) do
          fn(nil, string.format('smith serve exited (code %s, signal %s)', code, signal))
        end
        if s.turn and s.turn.on_exit then
          s.turn.on_exit()
        end
        if not s.stopping and code ~= 0 then
          util.error(
            'smith: smith serve for %s exited with code %d; its stderr is in %s; try `%s` by hand',
            root,
            code,
            vim.lsp.get_log_path(),
            table.concat(cmd, ' ')
          )
        end
        util.redraw_status()
      end)
    end,
  })
  if not id then
    return nil, 'smith: the LSP client refused to start ' .. table.concat(cmd, ' ')
  end
  s.client_id = id
  sessions[root] = s
  by_client[id] = s
  if config.options.attach_buffers then
    for _, buf in ipairs(vim.api.nvim_list_bufs()) do
      M.maybe_attach(buf)
    end
  end
  util.redraw_status()
  return s
end

--- Attaches the smith client of the buffer's workspace to a file buffer, so
--- that smith mirrors its text and edits it through workspace/applyEdit.
function M.maybe_attach(buf)
  if not config.options.attach_buffers or not vim.api.nvim_buf_is_loaded(buf) then
    return
  end
  if vim.bo[buf].buftype ~= '' then
    return
  end
  local name = vim.api.nvim_buf_get_name(buf)
  if name == '' or name:match('^%a[%w+.-]*://') then
    return
  end
  local path = util.normalize(name)
  for root, s in pairs(sessions) do
    if not s.stopped and util.is_under(path, root) then
      if not vim.lsp.buf_is_attached(buf, s.client_id) then
        vim.lsp.buf_attach_client(buf, s.client_id)
      end
    end
  end
end

--- Runs fn(client) once the daemon has answered initialize; fn(nil, err)
--- when it exits first.
function Session:with_client(fn)
  if self.initialized and self.client then
    fn(self.client)
  elseif self.stopped then
    fn(nil, 'smith serve is not running')
  else
    table.insert(self.waiters, fn)
  end
end

--- Sends a request; cb(err, result) where err is an LSP error table or a
--- string. Returns nothing: the request id reaches cb_id(id) when given.
function Session:request(method, params, cb, cb_id)
  cb = cb or function() end
  -- An empty Lua table would be encoded as [], which smith rightly refuses.
  if params == nil or (type(params) == 'table' and next(params) == nil) then
    params = vim.empty_dict()
  end
  self:with_client(function(client, err)
    if not client then
      cb({ message = err })
      return
    end
    local ok, id = invoke(client, 'request', method, params, function(rerr, result)
      cb(rerr, result)
    end)
    if not ok then
      cb({ message = 'smith serve is not running' })
    elseif cb_id then
      cb_id(id)
    end
  end)
end

--- Sends a request and waits up to timeout ms (default config.timeout) for
--- its answer. Returns result, err.
function Session:request_sync(method, params, timeout)
  local done, res, rerr = false, nil, nil
  self:request(method, params, function(err, result)
    done, res, rerr = true, result, err
  end)
  local ok = vim.wait(timeout or config.options.timeout, function()
    return done
  end, 10)
  if not ok then
    return nil, { message = method .. ': no answer within ' .. (timeout or config.options.timeout) .. ' ms' }
  end
  return res, rerr
end

--- Cancels a request by id ($/cancelRequest).
function Session:cancel(id)
  if self.client and id then
    invoke(self.client, 'cancel_request', id)
  end
end

--- Stops the daemon (shutdown + exit, as the LSP client does it).
function Session:stop(force)
  self.stopping = true
  if self.client then
    invoke(self.client, 'stop', force)
  elseif self.client_id then
    vim.lsp.stop_client(self.client_id, force)
  end
end

--- Stops every daemon; called on VimLeavePre.
function M.stop_all(force)
  for _, s in pairs(sessions) do
    s:stop(force)
  end
end

return M
