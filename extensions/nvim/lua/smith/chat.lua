-- The chat buffer: one markdown scratch buffer per workspace that shows the
-- current dialog. Turns append to it as their events stream in; reasoning is
-- written as a block quote that the window folds; tool calls, changes and
-- notices are one list line each. Nothing here interprets the stream beyond
-- choosing how to draw each normalized event.
local config = require('smith.config')
local util = require('smith.util')

local M = {}

local api = vim.api

-- Folds every run of lines that starts with '>' (the reasoning quote).
local FOLDEXPR = [[getline(v:lnum)=~'^>'?1:0]]

local function set_win_opts(win)
  if not api.nvim_win_is_valid(win) then
    return
  end
  local wo = vim.wo[win]
  wo.wrap = true
  wo.linebreak = true
  wo.number = false
  wo.relativenumber = false
  wo.foldmethod = 'expr'
  wo.foldexpr = FOLDEXPR
  wo.foldlevel = 0
  wo.foldenable = true
end

local function map(buf, lhs, fn, desc)
  if lhs then
    vim.keymap.set('n', lhs, fn, { buffer = buf, nowait = true, silent = true, desc = desc })
  end
end

--- Returns the chat buffer of a session, creating it when needed.
function M.buffer(session)
  local buf = session.chat_buf
  if buf and api.nvim_buf_is_valid(buf) then
    return buf
  end
  -- A daemon started again for the same root (after :SmithStop or a crash)
  -- continues in the chat buffer of the previous one.
  for _, b in ipairs(api.nvim_list_bufs()) do
    local ok, root = pcall(api.nvim_buf_get_var, b, 'smith_chat_root')
    if ok and root == session.root then
      session.chat_buf = b
      session.chat_state = { block = nil }
      return b
    end
  end
  buf = api.nvim_create_buf(false, true)
  pcall(api.nvim_buf_set_name, buf, 'smith://chat' .. session.root)
  vim.bo[buf].buftype = 'nofile'
  vim.bo[buf].bufhidden = 'hide'
  vim.bo[buf].swapfile = false
  vim.bo[buf].filetype = 'markdown'
  vim.bo[buf].modifiable = false
  api.nvim_buf_set_var(buf, 'smith_root', session.root)
  api.nvim_buf_set_var(buf, 'smith_chat_root', session.root)
  session.chat_buf = buf
  session.chat_state = { block = nil }
  local keys = config.options.keymaps.chat or {}
  map(buf, keys.close, function()
    if #api.nvim_list_wins() > 1 then
      api.nvim_win_close(0, false)
    end
  end, 'smith: close the chat window')
  map(buf, keys.cancel, function()
    require('smith').cancel(session.root)
  end, 'smith: cancel the running turn')
  map(buf, keys.changes, function()
    require('smith').changes(session.root)
  end, 'smith: list pending changes')
  map(buf, keys.send, function()
    require('smith').prompt(session.root)
  end, 'smith: send a message')
  api.nvim_create_autocmd('BufWinEnter', {
    buffer = buf,
    callback = function()
      set_win_opts(api.nvim_get_current_win())
    end,
  })
  return buf
end

local function open_split(buf)
  local opts = config.options.chat
  local pos = opts.position
  local size = opts.size or 0.4
  if pos == 'current' then
    api.nvim_win_set_buf(0, buf)
    return api.nvim_get_current_win()
  elseif pos == 'tab' then
    vim.cmd('tab sbuffer ' .. buf)
    return api.nvim_get_current_win()
  end
  local vertical = pos == 'right' or pos == 'left'
  local total = vertical and vim.o.columns or vim.o.lines
  local n = size < 1 and math.floor(total * size) or size
  local mods = ({ right = 'botright vertical', left = 'topleft vertical', above = 'topleft', below = 'botright' })[pos]
    or 'botright vertical'
  vim.cmd(string.format('%s %dsplit', mods, math.max(n, 10)))
  local win = api.nvim_get_current_win()
  api.nvim_win_set_buf(win, buf)
  return win
end

--- Shows the chat buffer: reuses a window of the current tab that shows it,
--- else opens one as configured. Keeps the focus where it was unless focus.
function M.open(session, focus)
  local buf = M.buffer(session)
  local win
  for _, w in ipairs(api.nvim_tabpage_list_wins(0)) do
    if api.nvim_win_get_buf(w) == buf then
      win = w
    end
  end
  if not win then
    local prev = api.nvim_get_current_win()
    win = open_split(buf)
    set_win_opts(win)
    if not focus and api.nvim_win_is_valid(prev) and prev ~= win then
      api.nvim_set_current_win(prev)
    end
  elseif focus then
    api.nvim_set_current_win(win)
  end
  return win
end

-- Runs fn with the chat buffer modifiable and keeps windows that were at the
-- end of the buffer following the new text.
local function edit(buf, fn)
  local last = api.nvim_buf_line_count(buf)
  local follow = {}
  for _, w in ipairs(vim.fn.win_findbuf(buf)) do
    if api.nvim_win_get_cursor(w)[1] >= last or w ~= api.nvim_get_current_win() then
      table.insert(follow, w)
    end
  end
  vim.bo[buf].modifiable = true
  local ok, err = pcall(fn)
  vim.bo[buf].modifiable = false
  if not ok then
    error(err)
  end
  local n = api.nvim_buf_line_count(buf)
  for _, w in ipairs(follow) do
    if api.nvim_win_is_valid(w) then
      pcall(api.nvim_win_set_cursor, w, { n, 0 })
    end
  end
end

local function last_lines(buf)
  local n = api.nvim_buf_line_count(buf)
  local lines = api.nvim_buf_get_lines(buf, math.max(n - 2, 0), n, false)
  return lines[#lines] or '', lines[#lines - 1], n
end

local function is_empty_buffer(buf)
  local n = api.nvim_buf_line_count(buf)
  return n == 1 and api.nvim_buf_get_lines(buf, 0, 1, false)[1] == ''
end

-- Makes the last line an empty line preceded by a blank line, so that a new
-- block starts its own paragraph.
local function separate(buf)
  if is_empty_buffer(buf) then
    return
  end
  local last, prev = last_lines(buf)
  if last ~= '' then
    api.nvim_buf_set_lines(buf, -1, -1, false, { '', '' })
  elseif prev ~= nil and prev ~= '' then
    api.nvim_buf_set_lines(buf, -1, -1, false, { '' })
  end
end

-- Appends text to the last line; newlines in text start new lines, each
-- with prefix.
local function append_text(buf, text, prefix)
  prefix = prefix or ''
  local parts = vim.split(text, '\n', { plain = true })
  local last = last_lines(buf)
  local lines = { last .. parts[1] }
  for i = 2, #parts do
    table.insert(lines, prefix .. parts[i])
  end
  api.nvim_buf_set_lines(buf, -2, -1, false, lines)
end

--- Appends whole lines (a list item, a heading) as their own block.
function M.lines(session, lines, kind)
  -- A line of the buffer cannot hold a newline; a message may.
  local flat = {}
  for _, l in ipairs(lines) do
    vim.list_extend(flat, vim.split(l, '\n', { plain = true }))
  end
  lines = flat
  local buf = M.buffer(session)
  local st = session.chat_state
  edit(buf, function()
    local last = last_lines(buf)
    if kind and st.block == kind and last ~= '' then
      api.nvim_buf_set_lines(buf, -1, -1, false, lines)
    else
      separate(buf)
      api.nvim_buf_set_lines(buf, -2, -1, false, lines)
    end
  end)
  st.block = kind
end

--- Streams a text or reasoning delta into the buffer.
function M.delta(session, text, kind)
  local buf = M.buffer(session)
  local st = session.chat_state
  local prefix = kind == 'reasoning' and '> ' or ''
  edit(buf, function()
    if st.block ~= kind then
      separate(buf)
      if kind == 'reasoning' then
        api.nvim_buf_set_lines(buf, -2, -1, false, { '> _reasoning_', '> ' })
      end
    end
    append_text(buf, text, prefix)
  end)
  st.block = kind
end

--- Clears the buffer (switching dialogs).
function M.clear(session)
  local buf = M.buffer(session)
  edit(buf, function()
    api.nvim_buf_set_lines(buf, 0, -1, false, { '' })
  end)
  session.chat_state.block = nil
end

--- Starts a turn in the buffer: the user's message, then the answer heading.
function M.begin_turn(session, message)
  local lines = { '## You', '' }
  vim.list_extend(lines, vim.split(message, '\n', { plain = true }))
  M.lines(session, lines, 'user')
  M.lines(session, { '## smith' }, 'heading')
end

local function short(v, max)
  local s = type(v) == 'string' and v or vim.fn.json_encode(v)
  s = s:gsub('%s+', ' ')
  if #s > max then
    s = s:sub(1, max - 1) .. '…'
  end
  return s
end

local renderers = {}

function renderers.text(session, ev)
  if ev.text and ev.text ~= '' then
    M.delta(session, ev.text, 'text')
  end
end

function renderers.reasoning(session, ev)
  if config.options.chat.show_reasoning and ev.text and ev.text ~= '' then
    M.delta(session, ev.text, 'reasoning')
  end
end

function renderers.segment(session, ev)
  -- The end of a block makes the next delta start a new paragraph.
  if ev.segment and ev.segment.phase == 'end' then
    session.chat_state.block = nil
  end
end

function renderers.toolCall(session, ev)
  local t = ev.toolCall or {}
  if not config.options.chat.show_tools then
    return
  end
  -- Chunks with one id are one call whose status moves (Oracle): one line.
  if t.id and t.id ~= vim.NIL and t.id ~= '' then
    session.chat_state.tools = session.chat_state.tools or {}
    local seen = session.chat_state.tools[t.id]
    session.chat_state.tools[t.id] = t.status or ''
    if seen then
      if t.status == 'error' and seen ~= 'error' then
        M.lines(session, { string.format('- tool `%s` failed', t.name or t.id) }, 'item')
      end
      return
    end
  end
  local args = t.args and t.args ~= vim.NIL and (' ' .. short(t.args, 80)) or ''
  M.lines(session, { string.format('- tool `%s`%s', t.name or '?', args) }, 'item')
end

function renderers.toolResult(session, ev)
  local t = ev.toolResult or {}
  if not config.options.chat.show_tools then
    return
  end
  local line
  if t.error and t.error ~= '' then
    line = string.format('- tool `%s` failed: %s', t.name or t.id or '?', short(t.error, 120))
  else
    line = string.format('- tool `%s` done', t.name or t.id or '?')
  end
  M.lines(session, { line }, 'item')
end

function renderers.change(session, ev)
  local c = ev.change or {}
  local how = c.appliedUpstream and 'written by the server' or 'proposed'
  local path = c.path or '?'
  path = util.relative(path, session.root) or path
  if c.appliedUpstream and (c.diff or '') == '' and (c.kind or 'modify') == 'modify' then
    -- A whole-file write: nothing to review hunk by hunk; the session is
    -- the way back.
    M.lines(session, { string.format('- `%s` written whole by the server (:SmithSession to review or reset)', path) }, 'item')
    return
  end
  M.lines(session, { string.format('- change %s `%s` %s', c.kind or 'modify', path, how) }, 'item')
end

function renderers.citation(session, ev)
  local c = ev.citation or {}
  local what = c.title or c.file or c.url or c.section or '?'
  local where = c.url and c.url ~= what and (' <' .. c.url .. '>') or ''
  M.lines(session, { string.format('- source: %s%s', what, where) }, 'item')
end

function renderers.notice(session, ev)
  local n = ev.notice or {}
  -- The user echo repeats our own message; classification is noise here.
  if n.kind == 'user' or n.kind == 'classification' or not n.message or n.message == '' then
    return
  end
  M.lines(session, { string.format('- _%s: %s_', n.kind or 'notice', short(n.message, 200)) }, 'item')
end

function renderers.error(session, ev)
  local e = ev.error or {}
  M.lines(session, { string.format('**error** (%s): %s', e.code or '?', e.message or '') }, 'error')
end

function renderers.violation(session, ev)
  local v = ev.violation or {}
  local line = string.format('- _stream violation (%s): %s_', v.kind or '?', short(v.message or '', 200))
  M.lines(session, { line }, 'item')
end

function renderers.turnEnd() end

--- Draws one normalized event.
function M.render(session, ev)
  local fn = renderers[ev.type]
  if fn then
    fn(session, ev)
  end
end

--- Closes a turn in the buffer with its outcome and the changes it proposed.
function M.end_turn(session, outcome, nchanges, errmsg)
  local parts = { outcome or 'ended' }
  if errmsg then
    table.insert(parts, (tostring(errmsg):gsub('%s*\n%s*', ' ')))
  end
  if nchanges and nchanges > 0 then
    table.insert(parts, string.format('%d change%s to review: :SmithChanges', nchanges, nchanges == 1 and '' or 's'))
  end
  M.lines(session, { '_— ' .. table.concat(parts, ' · ') .. '_' }, 'end')
end

--- Fills the buffer with a dialog's earlier messages: the events of
--- smith/history (user, chat, reasoning, tool_call, file_edit).
function M.history(session, events)
  M.clear(session)
  local answered = true
  for _, m in ipairs(events or {}) do
    local kind = m.type or m.role
    local content = m.content
    if type(content) ~= 'string' then
      content = ''
    end
    if kind ~= 'user' and not answered then
      M.lines(session, { '## smith' }, 'heading')
      answered = true
    end
    if kind == 'user' then
      answered = false
      local lines = { '## You', '' }
      vim.list_extend(lines, vim.split(content, '\n', { plain = true }))
      M.lines(session, lines, 'user')
    elseif kind == 'reasoning' then
      if config.options.chat.show_reasoning and content ~= '' then
        M.delta(session, content, 'reasoning')
        session.chat_state.block = nil
      end
    elseif kind == 'tool_call' then
      if config.options.chat.show_tools then
        M.lines(session, { string.format('- tool `%s`', m.name or '?') }, 'item')
      end
    elseif kind == 'file_edit' then
      M.lines(session, { string.format('- change `%s`', m.file or '?') }, 'item')
    elseif content ~= '' then
      M.delta(session, content, 'text')
      session.chat_state.block = nil
    end
  end
end

return M
