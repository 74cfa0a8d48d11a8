-- The headless suite of smith.nvim. run.sh starts two embedded upstreams
-- (AgentSmithy v0: the client applies the diffs) and Neovim with
-- minimal_init.lua; main() runs every test against real `smith serve`
-- processes that the plugin starts, one per workspace root.
--
-- Every wait is vim.wait on a condition, never a fixed sleep.
local M = {}

local api = vim.api
local env = vim.env

local BIN = env.SMITH_BIN
local WS = vim.loop.fs_realpath(env.SMITH_TEST_WS)
local URL = env.SMITH_TEST_URL
local WS_STALL = vim.loop.fs_realpath(env.SMITH_TEST_WS_STALL)
local URL_STALL = env.SMITH_TEST_URL_STALL
local WS_V2 = vim.loop.fs_realpath(env.SMITH_TEST_WS_V2)
local URL_V2 = env.SMITH_TEST_URL_V2
local WS_ORACLE = vim.loop.fs_realpath(env.SMITH_TEST_WS_ORACLE)
local URL_ORACLE = env.SMITH_TEST_URL_ORACLE
local TIMEOUT = 15000
-- A workspace whose upstream does not answer (nothing listens on port 9).
local WS_DOWN = vim.fn.tempname()
vim.fn.mkdir(WS_DOWN .. '/.git', 'p')
WS_DOWN = vim.loop.fs_realpath(WS_DOWN)
local URL_DOWN = 'http://127.0.0.1:9'

local tests = {}

local function test(name, fn)
  table.insert(tests, { name = name, fn = fn })
end

local function out(line)
  io.stdout:write(line .. '\n')
  io.stdout:flush()
end

-- Assertions: each raises with what was expected and what was found.
local function fail(msg)
  error(msg, 3)
end

local function wait_for(what, cond, ms)
  if not vim.wait(ms or TIMEOUT, cond, 20) then
    fail('timed out waiting for ' .. what)
  end
end

local function eq(got, want, what)
  if not vim.deep_equal(got, want) then
    fail(string.format('%s: want %s, got %s', what, vim.inspect(want), vim.inspect(got)))
  end
end

local function truthy(v, what)
  if not v then
    fail(what)
  end
end

local function contains(haystack, needle, what)
  if not haystack:find(needle, 1, true) then
    fail(string.format('%s: %q not found in:\n%s', what, needle, haystack))
  end
end

local function write_file(path, text)
  vim.fn.mkdir(vim.fn.fnamemodify(path, ':h'), 'p')
  local f = assert(io.open(path, 'wb'))
  f:write(text)
  f:close()
end

local function read_file(path)
  local f = io.open(path, 'rb')
  if not f then
    return nil
  end
  local s = f:read('*a')
  f:close()
  return s
end

local function buf_text(buf)
  return table.concat(api.nvim_buf_get_lines(buf, 0, -1, false), '\n') .. '\n'
end

-- A Go file where `total` occurs far apart, so that renaming it gives a
-- diff with two hunks.
local function calc_source(name)
  local lines = { 'package calc', '', 'var ' .. name .. ' = 0', '' }
  for i = 1, 12 do
    table.insert(lines, string.format('// filler line %d', i))
  end
  vim.list_extend(lines, { '', 'func Add(n int) int {', '\t' .. name .. ' += n', '\treturn ' .. name, '}' })
  return table.concat(lines, '\n') .. '\n'
end

local smith = require('smith')
local client = require('smith.client')
local changes = require('smith.changes')

-- Runs a turn with :Smith and waits for its end; returns { result, err }.
local function turn_end(cmd)
  local ended
  smith.hooks.turnEnd = function(_, result, err)
    ended = { result = result, err = err }
  end
  vim.cmd(cmd)
  wait_for('the end of the turn: ' .. cmd, function()
    return ended ~= nil
  end)
  smith.hooks.turnEnd = nil
  return ended
end

-- Runs a turn that must succeed; returns the result.
local function turn(cmd)
  local ended = turn_end(cmd)
  if ended.err then
    fail('turn failed: ' .. vim.inspect(ended.err))
  end
  return ended.result
end

-- Makes root the current directory in a single empty window, with no
-- smith daemon running for it.
local function fresh_start(root)
  vim.cmd('silent only')
  vim.cmd('enew')
  vim.cmd('cd ' .. vim.fn.fnameescape(root))
  if client.get(root) then
    vim.cmd('SmithStop')
    wait_for('the daemon to stop', function()
      return client.get(root) == nil
    end)
  end
end

local function session_of(root)
  local s = client.get(root)
  truthy(s, 'no smith session for ' .. root)
  wait_for('smith serve to initialize', function()
    return s.initialized
  end)
  return s
end

local function find_win(buf)
  for _, w in ipairs(api.nvim_tabpage_list_wins(0)) do
    if api.nvim_win_get_buf(w) == buf then
      return w
    end
  end
end

-- Opens a file and returns its buffer, attached to the workspace's daemon.
local function open_file_in(root, rel)
  vim.cmd('silent only')
  vim.cmd('edit ' .. vim.fn.fnameescape(root .. '/' .. rel))
  return api.nvim_get_current_buf()
end

local function open_file(rel)
  return open_file_in(WS, rel)
end

local function wait_attached(buf, s)
  wait_for('the buffer to be attached to smith', function()
    return vim.lsp.buf_is_attached(buf, s.client_id)
  end)
end

-- Writes calc_source('total') to WS/rel, opens it, and waits until smith
-- mirrors the buffer: returns the path, that text, the buffer and the session.
local function open_calc(rel)
  local path = WS .. '/' .. rel
  local before = calc_source('total')
  write_file(path, before)
  local buf = open_file(rel)
  local s = session_of(WS)
  wait_attached(buf, s)
  return path, before, buf, s
end

-- Proposes a rename and opens its preview; returns the change record and
-- the preview buffer.
local function propose_and_preview(rel, old, new)
  local result = turn(string.format('Smith rename %s to %s in %s', old, new, rel))
  eq(result.outcome, 'completed', 'turn outcome')
  eq(#result.changes, 1, 'number of proposed changes')
  local id = result.changes[1]
  local pbuf
  smith.preview(id, WS, function(b)
    pbuf = b
  end)
  wait_for('the preview of ' .. id, function()
    return pbuf ~= nil
  end)
  local p = changes.preview_state(pbuf)
  truthy(p, 'no preview state')
  return p, pbuf, id
end

-- Presses keys in the preview window, as a user would.
local function press(pbuf, keys)
  local win = find_win(pbuf)
  truthy(win, 'the preview is not shown in a window')
  api.nvim_set_current_win(win)
  api.nvim_feedkeys(api.nvim_replace_termcodes(keys, true, false, true), 'x', false)
end

local function change_status(s, id)
  local res = s:request_sync('smith/changes', {})
  for _, c in ipairs(res or {}) do
    if c.id == id then
      return c.status, c
    end
  end
end

test('setup starts one smith serve per workspace root and reports idle', function()
  vim.cmd('cd ' .. vim.fn.fnameescape(WS))
  eq(smith.status(), '', 'status before any daemon runs')
  vim.cmd('SmithChat')
  local s = session_of(WS)
  eq(smith.status(), 'smith: idle', 'status line')
  eq(vim.bo.filetype, 'markdown', 'chat buffer filetype')
  local again = client.ensure(WS)
  eq(again, s, 'the same session for the same root')
end)

test(':checkhealth smith reports the binary, its version and the upstream', function()
  vim.cmd('checkhealth smith')
  local text = buf_text(api.nvim_get_current_buf())
  contains(text, BIN, 'health report names the binary')
  contains(text, 'version', 'health report names the version')
  contains(text, 'smith serve answers', 'health report')
  contains(text, 'answers', 'health report says the upstream answers')
  truthy(not text:find('ERROR'), 'health report has errors:\n' .. text)
  vim.cmd('bwipeout!')
end)

test('a turn streams into the markdown chat buffer', function()
  write_file(WS .. '/stream.go', calc_source('total'))
  local s = session_of(WS)
  local chat_buf = s.chat_buf
  local seen = {}
  local statuses = {}
  smith.hooks.event = function(_, params)
    local ev = params.event
    if ev.type == 'text' then
      table.insert(seen, #buf_text(chat_buf))
    end
    statuses[smith.status()] = true
  end
  local result = turn('Smith rename total to count in stream.go')
  smith.hooks.event = nil
  eq(result.outcome, 'completed', 'outcome')
  truthy(#seen >= 2, 'fewer than two text deltas arrived: ' .. #seen)
  for i = 2, #seen do
    truthy(seen[i] > seen[i - 1], 'the chat buffer did not grow with each text delta')
  end
  truthy(statuses['smith: streaming'], 'the status line never showed the streaming turn: ' .. vim.inspect(statuses))
  local text = buf_text(chat_buf)
  contains(text, '## You', 'chat buffer')
  contains(text, 'rename total to count in stream.go', 'chat buffer holds the message')
  contains(text, '## smith', 'chat buffer')
  contains(text, result.text:sub(1, 20), 'chat buffer holds the answer')
  contains(text, '- tool `', 'tool calls are shown as lines')
  contains(text, '1 change to review', 'the closing line names the change')
  eq(vim.bo[chat_buf].filetype, 'markdown', 'filetype')
  truthy(result.dialogId and result.dialogId ~= '', 'no dialog id')
  eq(s.dialog_id, result.dialogId, 'the chat keeps the dialog')
  wait_for('the status line to count the pending change', function()
    return smith.status(WS) == 'smith: idle · 1 pending'
  end)
  -- A second turn reuses the buffer and the dialog.
  local second = turn('Smith rename count to total in stream.go')
  eq(second.dialogId, result.dialogId, 'second turn dialog')
  eq(s.chat_buf, chat_buf, 'chat buffer reused')
  local _, n = buf_text(chat_buf):gsub('## You', '')
  eq(n, 2, 'turns in the chat buffer')
  -- Leave nothing pending for the tests below.
  for _, id in ipairs({ result.changes[1], second.changes[1] }) do
    s:request_sync('smith/change/reject', { changeId = id })
  end
end)

test('oracle: a tool call reported pending, running and done is one line; a failure is told', function()
  fresh_start(WS_ORACLE)
  smith.open_chat(WS_ORACLE)
  local s = session_of(WS_ORACLE)
  local result = turn('Smith find the auth code')
  eq(result.outcome, 'completed', 'outcome')
  local text = buf_text(s.chat_buf)
  local _, n = text:gsub('tool `search_code`', '')
  eq(n, 1, 'chat lines for the one search_code call in:\n' .. text)
  contains(text, 'tool `read_file` failed', 'chat buffer tells the failed call')
end)

test('v2: reasoning is folded; a file the server wrote is reloaded, and reject reverses it', function()
  -- An AgentSmithy v2 server streams reasoning and edits files itself.
  local rel = 'server.go'
  local path = WS_V2 .. '/' .. rel
  write_file(path, calc_source('total'))
  vim.cmd('silent only')
  vim.cmd('cd ' .. vim.fn.fnameescape(WS_V2))
  local buf = open_file_in(WS_V2, rel)
  smith.open_chat(WS_V2)
  local s = session_of(WS_V2)
  wait_attached(buf, s)
  vim.cmd('wincmd p')
  local reloaded = {}
  smith.hooks.fileChanged = function(_, params)
    table.insert(reloaded, params.path)
  end
  local result = turn('Smith rename total to sum in ' .. rel)
  eq(result.outcome, 'completed', 'outcome')
  eq(read_file(path), calc_source('sum'), 'the file the server wrote')
  wait_for('the buffer to be reloaded', function()
    return buf_text(buf) == calc_source('sum')
  end)
  eq(vim.bo[buf].modified, false, 'buffer modified after the reload')
  truthy(#reloaded > 0, 'smith/fileChanged never arrived')
  -- Rejecting a change the server wrote reverses it, in the buffer and on disk.
  local pbuf
  smith.preview(result.changes[1], WS_V2, function(b)
    pbuf = b
  end)
  wait_for('the preview of the written change', function()
    return pbuf ~= nil
  end)
  press(pbuf, 'R')
  wait_for('the original text in the buffer and on disk', function()
    return buf_text(buf) == calc_source('total') and read_file(path) == calc_source('total')
  end)
  local lines = api.nvim_buf_get_lines(s.chat_buf, 0, -1, false)
  local lnum
  for i, l in ipairs(lines) do
    if l:match('^> _reasoning_') then
      lnum = i
      break
    end
  end
  truthy(lnum, 'no reasoning block in the chat buffer:\n' .. table.concat(lines, '\n'))
  local win = find_win(s.chat_buf)
  truthy(win, 'the chat buffer is not shown')
  api.nvim_win_call(win, function()
    truthy(vim.fn.foldclosed(lnum) ~= -1, 'the reasoning block is not folded')
  end)
  vim.cmd('cd ' .. vim.fn.fnameescape(WS))
end)

test('v2: :SmithSession lists what the server wrote itself, and reset gives it up', function()
  vim.cmd('silent only')
  vim.cmd('enew')
  vim.cmd('cd ' .. vim.fn.fnameescape(WS_V2))
  local path = WS_V2 .. '/session-note.txt'
  local result = turn('Smith create session-note.txt with "hello"')
  eq(result.outcome, 'completed', 'outcome')
  eq(read_file(path), 'hello\n', 'the file the server wrote')
  contains(buf_text(session_of(WS_V2).chat_buf), '`session-note.txt` written whole by the server', 'the chat line of a whole-file write')
  local listed
  smith.session_action(nil, { root = WS_V2 }, function(err, res)
    listed = { err = err, res = res }
  end)
  wait_for('the session', function()
    return listed ~= nil
  end)
  truthy(not listed.err, 'session failed: ' .. vim.inspect(listed.err))
  local paths = {}
  for _, f in ipairs(listed.res.changed_files or {}) do
    paths[f.path] = f.status
  end
  eq(paths['session-note.txt'], 'added', 'the session lists the new file')
  local reset
  smith.session_action('reset', { root = WS_V2, force = true }, function(err, res)
    reset = { err = err, res = res }
  end)
  wait_for('the reset', function()
    return reset ~= nil
  end)
  truthy(not reset.err, 'reset failed: ' .. vim.inspect(reset.err))
  eq(read_file(path), nil, 'the file after reset')
end)

test('a change is accepted hunk by hunk into the open buffer and the file', function()
  local rel = 'calc.go'
  local path, before, buf, s = open_calc(rel)
  local after = calc_source('sum')
  local p, pbuf, id = propose_and_preview(rel, 'total', 'sum')
  eq(#p.located, 2, 'hunks in the preview')
  local hunk_ids = { p.located[1].hunk.id, p.located[2].hunk.id }
  eq(buf_text(buf), before, 'the buffer before any accept')

  -- Accept the first hunk only: line 3 changes, the function does not.
  api.nvim_win_set_cursor(find_win(pbuf), { p.located[1].lnum, 0 })
  press(pbuf, 'a')
  wait_for('the first hunk in the buffer and on disk', function()
    return api.nvim_buf_get_lines(buf, 2, 3, false)[1] == 'var sum = 0' and read_file(path) == buf_text(buf)
  end)
  local lines = api.nvim_buf_get_lines(buf, 0, -1, false)
  eq(lines[19], '\ttotal += n', 'the second hunk is still pending in the buffer')
  eq(vim.bo[buf].modified, false, 'the buffer is written')
  eq((change_status(s, id)), 'pending', 'the change status after one hunk')

  -- The preview now shows the one pending hunk; jump to it and accept it.
  wait_for('the preview to show only the pending hunk', function()
    local pp = changes.preview_state(pbuf)
    return pp and #pp.located == 1 and pp.located[1].hunk and pp.located[1].hunk.id == hunk_ids[2]
  end)
  local second = changes.preview_state(pbuf).located[1]
  api.nvim_win_set_cursor(find_win(pbuf), { 1, 0 })
  press(pbuf, ']c')
  eq(api.nvim_win_get_cursor(find_win(pbuf))[1], second.lnum, 'cursor after ]c')
  press(pbuf, 'a')
  wait_for('both hunks in the buffer and on disk', function()
    return buf_text(buf) == after and read_file(path) == after
  end)
  wait_for('the change to be applied', function()
    return change_status(s, id) == 'applied'
  end)
  -- Neovim applied the edit itself: one undo step per accepted hunk.
  api.nvim_buf_call(buf, function()
    vim.cmd('silent undo')
  end)
  eq(api.nvim_buf_get_lines(buf, 18, 19, false)[1], '\ttotal += n', 'buffer after :undo')
  api.nvim_buf_call(buf, function()
    vim.cmd('silent redo')
  end)
  eq(buf_text(buf), after, 'buffer after :redo')
end)

test('rejecting a change leaves the buffer and the file as they were', function()
  local rel = 'reject.go'
  local path, before, buf, s = open_calc(rel)
  local result = turn(string.format('Smith rename total to sum in %s', rel))
  local id = result.changes[1]
  -- :SmithChanges lists the hunks in the quickfix list and previews the change.
  vim.cmd('SmithChanges')
  wait_for('the quickfix list of pending hunks', function()
    local qf = vim.fn.getqflist({ title = 0, items = 0 })
    return qf.title == 'smith changes' and #qf.items == 2 and qf.items[1].text:find('[' .. id .. '/', 1, true) ~= nil
  end)
  local pbuf
  wait_for('the preview of ' .. id, function()
    pbuf = vim.fn.bufnr('smith://change/' .. id)
    local p = pbuf ~= -1 and changes.preview_state(pbuf)
    return p and #p.located == 2
  end)
  -- The preview and the quickfix list show where smith placed the hunks.
  local first = changes.preview_state(pbuf).located[1]
  eq(api.nvim_buf_get_lines(pbuf, first.lnum - 1, first.lnum, false)[1], vim.split(first.hunk.text, '\n')[1], 'the first line of the hunk in the preview')
  eq(vim.fn.getqflist()[1].lnum, first.hunk.oldStart, 'the quickfix line of the first hunk')
  -- <CR> opens the file at the hunk under the cursor.
  press(pbuf, '<CR>')
  eq(api.nvim_get_current_buf(), buf, 'the buffer <CR> opened')
  eq(api.nvim_win_get_cursor(0)[1], 3, 'the line <CR> jumped to')
  -- [c from the end reaches the last hunk; r rejects just that one.
  local last = changes.preview_state(pbuf).located[2]
  local pwin = find_win(pbuf)
  api.nvim_win_set_cursor(pwin, { api.nvim_buf_line_count(pbuf), 0 })
  press(pbuf, '[c')
  eq(api.nvim_win_get_cursor(pwin)[1], last.lnum, 'cursor after [c')
  press(pbuf, 'r')
  wait_for('the last hunk to be rejected', function()
    local _, c = change_status(s, id)
    return c and c.hunks[2].status == 'rejected' and c.hunks[1].status == 'pending'
  end)
  eq(buf_text(buf), before, 'buffer after rejecting one hunk')
  press(pbuf, 'R')
  wait_for('the change to be rejected', function()
    return change_status(s, id) == 'rejected'
  end)
  eq(buf_text(buf), before, 'buffer after reject')
  eq(read_file(path), before, 'file after reject')
  eq(vim.bo[buf].modified, false, 'buffer modified after reject')
end)

test(':SmithUndo restores the buffer and the file', function()
  local rel = 'undo.go'
  local path, before, buf, s = open_calc(rel)
  local after = calc_source('sum')
  local _, pbuf, id = propose_and_preview(rel, 'total', 'sum')
  press(pbuf, 'A')
  wait_for('the accepted change in the buffer and on disk', function()
    return buf_text(buf) == after and read_file(path) == after
  end)
  local done
  smith.undo(id, WS, function(err)
    done = { err = err }
  end)
  wait_for('the undo answer', function()
    return done ~= nil
  end)
  truthy(not done.err, 'undo failed: ' .. vim.inspect(done.err))
  wait_for('the original text in the buffer and on disk', function()
    return buf_text(buf) == before and read_file(path) == before
  end)
  eq(vim.bo[buf].modified, false, 'buffer modified after undo')
end)

test('an undone change stays undone after another change to its file is applied', function()
  local rel = 'undone.go'
  local path, before, buf, s = open_calc(rel)
  local _, pbuf1, c1 = propose_and_preview(rel, 'total', 'sum')
  press(pbuf1, 'A')
  wait_for('c1 in the buffer', function()
    return buf_text(buf) == calc_source('sum')
  end)
  local done
  smith.undo(c1, WS, function(err)
    done = { err = err }
  end)
  wait_for('the undo of c1', function()
    return done ~= nil and buf_text(buf) == before
  end)
  truthy(not done.err, 'undo failed: ' .. vim.inspect(done.err))
  local _, pbuf2, c2 = propose_and_preview(rel, 'total', 'count')
  press(pbuf2, 'A')
  local after = calc_source('count')
  wait_for('c2 in the buffer and on disk', function()
    return buf_text(buf) == after and read_file(path) == after
  end)
  wait_for('c2 to be applied', function()
    return change_status(s, c2) == 'applied'
  end)
  local st, c = change_status(s, c1)
  eq(st, 'undone', 'c1 after c2 was applied')
  for _, h in ipairs(c.hunks) do
    eq(h.status, 'undone', 'hunk ' .. h.id .. ' of c1')
  end
  -- :SmithChanges does not offer c1 for review.
  vim.cmd('SmithChanges')
  wait_for('the quickfix list', function()
    return vim.fn.getqflist({ title = 0 }).title == 'smith changes' or vim.fn.getqflist({ title = 0 }).title == ''
  end)
  for _, item in ipairs(vim.fn.getqflist()) do
    truthy(not item.text:find('[' .. c1 .. '/', 1, true), 'c1 is offered for review: ' .. item.text)
  end
  eq(vim.fn.bufnr('smith://change/' .. c1), pbuf1, 'the only preview of c1 is the old one')
  -- A new 'a' in c2's preview does not bring c1 back.
  if api.nvim_buf_is_valid(pbuf2) and find_win(pbuf2) then
    press(pbuf2, 'a')
  end
  eq(buf_text(buf), after, 'the buffer after another a')
  eq((change_status(s, c1)), 'undone', 'c1 after another a')
  vim.cmd('cclose')
end)

test('a buffer with unsaved edits gets the change on top of them and is not written', function()
  local rel = 'dirty.go'
  local path, before, buf, s = open_calc(rel)
  -- An unsaved edit at the top: smith plans against the buffer, not the disk.
  api.nvim_buf_set_lines(buf, 0, 0, false, { '// unsaved note' })
  local _, pbuf = propose_and_preview(rel, 'total', 'sum')
  press(pbuf, 'A')
  local want = '// unsaved note\n' .. calc_source('sum')
  wait_for('the change in the buffer, above the unsaved edit', function()
    return buf_text(buf) == want
  end)
  eq(vim.bo[buf].modified, true, 'the buffer keeps its unsaved state')
  eq(read_file(path), before, 'the file on disk')
  api.nvim_buf_call(buf, function()
    vim.cmd('silent edit!')
  end)
end)

test('a change to a file that is not open is written on disk', function()
  local rel = 'closed.go'
  local path = WS .. '/' .. rel
  write_file(path, calc_source('total'))
  vim.cmd('silent only')
  local _, pbuf = propose_and_preview(rel, 'total', 'sum')
  press(pbuf, 'A')
  wait_for('the change on disk', function()
    return read_file(path) == calc_source('sum')
  end)
  eq(vim.fn.bufloaded(path), 0, 'the file was loaded into a buffer')
end)

test('deleting an open file closes its buffer; undo brings the file back', function()
  local rel = 'doomed.go'
  local path = WS .. '/' .. rel
  write_file(path, calc_source('total'))
  local buf = open_file(rel)
  local s = session_of(WS)
  wait_attached(buf, s)
  local result = turn('Smith delete ' .. rel)
  eq(#result.changes, 1, 'proposed changes')
  local id = result.changes[1]
  local _, c = change_status(s, id)
  eq(c.kind, 'delete', 'change kind')
  local pbuf
  smith.preview(id, WS, function(b)
    pbuf = b
  end)
  wait_for('the preview of the deletion', function()
    return pbuf ~= nil
  end)
  press(pbuf, 'A')
  wait_for('the file and its buffer to be gone', function()
    return read_file(path) == nil and not api.nvim_buf_is_valid(buf)
  end)
  local done
  smith.undo(id, WS, function(err)
    done = { err = err }
  end)
  wait_for('the undo answer', function()
    return done ~= nil
  end)
  truthy(not done.err, 'undo failed: ' .. vim.inspect(done.err))
  eq(read_file(path), calc_source('total'), 'the file after undo')
end)

test(':SmithDialogs creates, renames and deletes dialogs', function()
  local s = session_of(WS)
  local first = s.dialog_id
  truthy(first, 'no dialog yet')
  local orig_select, orig_input = vim.ui.select, vim.ui.input
  local answers = {}
  vim.ui.select = function(items, opts, on_choice)
    local want = table.remove(answers, 1)
    for _, it in ipairs(items) do
      local label = opts.format_item and opts.format_item(it) or it
      if label:find(want, 1, true) then
        return on_choice(it)
      end
    end
    error('no item matches ' .. want .. ' in ' .. vim.inspect(items))
  end
  vim.ui.input = function(_, on_confirm)
    on_confirm(table.remove(answers, 1))
  end
  local ok, err = pcall(function()
    local function list()
      return s:request_sync('smith/dialogs', {}) or {}
    end
    local function titled(title)
      for _, d in ipairs(list()) do
        if d.title == title then
          return d
        end
      end
    end
    answers = { '+ new dialog', 'second dialog' }
    vim.cmd('SmithDialogs')
    wait_for('a new dialog', function()
      return s.dialog_id and s.dialog_id ~= first
    end)
    local second = s.dialog_id
    wait_for('the new dialog in the list', function()
      return titled('second dialog') ~= nil
    end)
    answers = { '[' .. second .. ']', 'Rename', 'renamed dialog' }
    vim.cmd('SmithDialogs')
    wait_for('the renamed dialog', function()
      return titled('renamed dialog') ~= nil
    end)
    answers = { '[' .. first .. ']', 'Open' }
    vim.cmd('SmithDialogs')
    wait_for('the first dialog selected', function()
      return s.dialog_id == first
    end)
    answers = { '[' .. second .. ']', 'Delete', 'Delete' }
    vim.cmd('SmithDialogs')
    wait_for('the dialog deleted', function()
      for _, d in ipairs(list()) do
        if d.id == second then
          return false
        end
      end
      return true
    end)
    eq(s.dialog_id, first, 'the current dialog after deleting another')
  end)
  vim.ui.select, vim.ui.input = orig_select, orig_input
  if not ok then
    error(err, 0)
  end
end)

test(':SmithStop stops the daemon; the next turn starts one and keeps the chat buffer', function()
  vim.cmd('silent only')
  vim.cmd('enew')
  vim.cmd('cd ' .. vim.fn.fnameescape(WS))
  local s = session_of(WS)
  local chat_buf = s.chat_buf
  local before = buf_text(chat_buf)
  vim.cmd('SmithStop')
  wait_for('the daemon to stop', function()
    return client.get(WS) == nil
  end)
  eq(smith.status(WS), '', 'status with no daemon')
  local result = turn('Smith hello')
  eq(result.outcome, 'completed', 'outcome')
  local s2 = session_of(WS)
  truthy(s2 ~= s, 'the old session was reused')
  eq(s2.chat_buf, chat_buf, 'chat buffer of the new daemon')
  truthy(vim.startswith(buf_text(chat_buf), before:sub(1, -2)), 'the earlier turns are still in the chat buffer')
end)

test('a smith chat in a terminal that holds the workspace is joined; after it, a turn starts a daemon of its own', function()
  fresh_start(WS)
  -- The terminal's interactive chat opens the engine itself (no daemon
  -- runs) and keeps it while its stdin is open.
  local chat_err, chat_code = {}, nil
  local job = vim.fn.jobstart({ BIN, 'chat', '--upstream', URL }, {
    cwd = WS,
    on_stderr = function(_, data)
      vim.list_extend(chat_err, data)
    end,
    on_exit = function(_, code)
      chat_code = code
    end,
  })
  truthy(job > 0, 'smith chat did not start')
  wait_for('smith chat to open the workspace', function()
    return table.concat(chat_err, '\n'):find('Ctrl-D leaves', 1, true) ~= nil
  end)
  -- Without joining, the daemon's initialize would fail on the chat's lock.
  local result = turn('Smith hello')
  eq(result.outcome, 'completed', 'outcome of a turn beside the terminal chat')
  local s = session_of(WS)
  vim.fn.chanclose(job, 'stdin') -- Ctrl-D: the chat ends, and with it the engine the editor joined
  wait_for('smith chat to end', function()
    return chat_code ~= nil
  end)
  eq(chat_code, 0, 'exit code of smith chat')
  wait_for('the joined daemon to end with the chat', function()
    return client.get(WS) == nil
  end)
  eq(s.status, 'off', 'status of the joined session')
  result = turn('Smith hello')
  eq(result.outcome, 'completed', 'outcome of the next turn, with a daemon of its own')
  truthy(session_of(WS) ~= s, 'the next turn reused the ended session')
end)

test('a workspace held by a process that cannot be joined: the turn ends with the reason, and works once it is gone', function()
  fresh_start(WS)
  local status = vim.json.decode(vim.fn.system({ BIN, 'status', '--json', '-C', WS, '--upstream', URL }))
  truthy(status.stateDir, 'smith status --json names no stateDir')
  -- flock(1) holds the engine's lock the way another smith would, without
  -- answering on serve.sock.
  local held = false
  local job = vim.fn.jobstart({ 'flock', '-n', status.stateDir .. '/lock', '-c', 'echo held; sleep 60' }, {
    on_stdout = function(_, data)
      held = held or table.concat(data, ''):find('held', 1, true) ~= nil
    end,
  })
  wait_for('flock to hold the lock', function()
    return held
  end)
  local ended = turn_end('Smith hello') -- it used to wait for ever
  truthy(ended.err, 'the turn did not fail')
  contains(vim.inspect(ended.err), 'workspace state in use', 'the reason given')
  eq(client.get(WS), nil, 'a session left behind by the failed start')
  vim.fn.jobstop(job)
  vim.fn.jobwait({ job }, 5000)
  local result = turn('Smith hello')
  eq(result.outcome, 'completed', 'outcome once the lock is free')
end)

test(':SmithCancel ends a running turn', function()
  -- This workspace's upstream stalls for 30 s after the first event.
  write_file(WS_STALL .. '/slow.go', calc_source('total'))
  vim.cmd('silent only')
  vim.cmd('enew')
  vim.cmd('cd ' .. vim.fn.fnameescape(WS_STALL))
  local ended
  smith.hooks.turnEnd = function(_, result, err)
    ended = { result = result, err = err }
  end
  local got_event = false
  smith.hooks.event = function()
    got_event = true
  end
  vim.cmd('Smith rename total to sum in slow.go')
  local s = session_of(WS_STALL)
  wait_for('the first event of the stalled turn', function()
    return got_event
  end)
  eq(smith.status(), 'smith: streaming', 'status while the turn runs')
  -- One turn at a time per workspace: a second one is refused, not queued.
  eq(smith.chat('rename sum to total in slow.go'), nil, 'a second turn while one runs')
  local _, asked = buf_text(s.chat_buf):gsub('## You', '')
  eq(asked, 1, 'messages in the chat buffer')
  vim.cmd('SmithCancel')
  wait_for('the cancelled turn to end', function()
    return ended ~= nil
  end, 10000)
  smith.hooks.turnEnd, smith.hooks.event = nil, nil
  truthy(not ended.err, 'cancel answered with an error: ' .. vim.inspect(ended.err))
  eq(ended.result.outcome, 'cancelled', 'outcome')
  eq(smith.status(), 'smith: cancelled', 'status after cancel')
  contains(buf_text(s.chat_buf), '_— cancelled', 'the chat buffer closes the turn')
  eq(read_file(WS_STALL .. '/slow.go'), calc_source('total'), 'the file after a cancelled turn')
  vim.cmd('cd ' .. vim.fn.fnameescape(WS))
end)

test('an unreachable upstream ends the turn with an error in the chat and the status line', function()
  vim.cmd('silent only')
  vim.cmd('enew')
  vim.cmd('cd ' .. vim.fn.fnameescape(WS_DOWN))
  local ended
  smith.hooks.turnEnd = function(_, result, err)
    ended = { result = result, err = err }
  end
  vim.cmd('Smith hello')
  wait_for('the failed turn to end', function()
    return ended ~= nil
  end)
  local s = session_of(WS_DOWN)
  local outcome = ended.err and 'error' or ended.result.outcome
  eq(outcome, 'error', 'outcome')
  eq(smith.status(), 'smith: error', 'status after the failed turn')
  local text = buf_text(s.chat_buf)
  contains(text, '_— error', 'the chat buffer closes the turn with the error')
  contains(text, '127.0.0.1:9', 'the error names the upstream')
  -- :checkhealth says so too.
  vim.cmd('checkhealth smith')
  local report = buf_text(api.nvim_get_current_buf())
  contains(report, 'upstream ' .. URL_DOWN .. ' does not answer', 'health report')
  vim.cmd('bwipeout!')
  vim.cmd('cd ' .. vim.fn.fnameescape(WS))
end)

local function setup()
  smith.setup({
    cmd = function(root)
      local url = ({ [WS_STALL] = URL_STALL, [WS_V2] = URL_V2, [WS_DOWN] = URL_DOWN, [WS_ORACLE] = URL_ORACLE })[root] or URL
      return { BIN, 'serve', '--upstream', url }
    end,
  })
end

-- Runs fn with vim.notify captured, then puts back vim.notify, the usual
-- setup and the working directory (also when fn fails); returns the
-- messages.
local function notified_during(fn)
  local notified = {}
  local orig = vim.notify
  vim.notify = function(msg, level)
    table.insert(notified, { msg = msg, level = level })
  end
  local ok, err = pcall(fn)
  vim.notify = orig
  setup()
  vim.cmd('cd ' .. vim.fn.fnameescape(WS))
  if not ok then
    error(err, 0)
  end
  return notified
end

test('a missing smith binary is reported with what to do', function()
  local notified = notified_during(function()
    smith.setup({ cmd = { '/nonexistent/smith', 'serve' } })
    vim.cmd('silent only')
    vim.cmd('enew')
    vim.cmd('cd ' .. vim.fn.fnameescape(WS_DOWN))
    if client.get(WS_DOWN) then
      client.get(WS_DOWN):stop()
    end
    wait_for('the daemon to stop', function()
      return client.get(WS_DOWN) == nil
    end)
    vim.cmd('Smith hello')
  end)
  eq(#notified, 1, 'messages')
  eq(notified[1].level, vim.log.levels.ERROR, 'message level')
  contains(notified[1].msg, "'/nonexistent/smith' is not an executable", 'message')
  contains(notified[1].msg, 'setup{cmd', 'message says how to fix it')
  eq(client.get(WS_DOWN), nil, 'a session without a daemon')
end)

-- smith serve answers initialize with the reason and then exits 2: the
-- reason, not "smith serve exited (code 2)", is what the turn ends with.
test('a state folder smith cannot use: the turn ends with smith serve\'s reason', function()
  local afile = vim.fn.tempname()
  write_file(afile, 'not a directory\n')
  local ended
  notified_during(function()
    smith.setup({ cmd = { BIN, 'serve', '--upstream', URL_DOWN, '--state-dir', afile } })
    fresh_start(WS_DOWN)
    ended = turn_end('Smith hello')
    wait_for('the refused daemon to be gone', function()
      return client.get(WS_DOWN) == nil
    end)
  end)
  truthy(ended.err, 'the turn did not fail')
  local why = vim.inspect(ended.err)
  contains(why, 'state directory ' .. afile .. ' (from --state-dir) cannot be used', 'the reason given')
  contains(why, 'give --state-dir a directory', 'what to do')
end)

function M.main()
  local filter = env.SMITH_TEST_FILTER or ''
  setup()
  local passed, failed = 0, 0
  for _, t in ipairs(tests) do
    if filter == '' or t.name:find(filter, 1, true) then
      local t0 = vim.loop.hrtime()
      local ok, err = xpcall(t.fn, debug.traceback)
      local took = string.format(' (%.1f s)', (vim.loop.hrtime() - t0) / 1e9)
      if ok then
        passed = passed + 1
        out('ok - ' .. t.name .. took)
      else
        failed = failed + 1
        out('not ok - ' .. t.name .. took)
        out('  ' .. tostring(err):gsub('\n', '\n  '))
      end
      smith.hooks = {}
    end
  end
  -- Quitting stops the daemons (VimLeavePre); run.sh checks that none is left.
  local f = assert(io.open(env.SMITH_TEST_OUT, 'w'))
  f:write(string.format('%d %d\n', passed, failed))
  f:close()
  vim.cmd('qall!')
end

return M
