-- Change proposals: the quickfix list of pending hunks and the preview
-- buffer, a diff with buffer-local keymaps that accept or reject the hunk
-- under the cursor (or all of them). smith computes and applies everything;
-- this module only shows what smith/changes and smith/change/preview return
-- and sends the user's decision back.
local config = require('smith.config')
local util = require('smith.util')

local M = {}

local api = vim.api
local ns = api.nvim_create_namespace('smith_changes')

local QF_TITLE = 'smith changes'

-- How a hunk's status shows at the end of its first line.
local STATUS_HL = { applied = 'DiffAdd', appliedUpstream = 'DiffAdd', rejected = 'DiffDelete', conflict = 'ErrorMsg' }

local function written(status)
  return status == 'applied' or status == 'appliedUpstream'
end

-- The first line of the file a hunk covers now, from the ranges smith
-- sends (docs/protocol.md, "Hunks and diffs"): a written hunk's text is at
-- its new range, any other hunk's old text at its old range. A side
-- without lines starts at the line after which it sits.
local function hunk_start(hunk)
  local start, count = tonumber(hunk.oldStart), tonumber(hunk.oldLines)
  if written(hunk.status) then
    start, count = tonumber(hunk.newStart), tonumber(hunk.newLines)
  end
  start = start or 1
  if count == 0 then
    start = start + 1
  end
  return math.max(start, 1)
end

--- Asks for changes ({dialogId?, status?}); cb(changes, err).
function M.fetch(session, filter, cb)
  session:request('smith/changes', filter or {}, function(err, result)
    if err then
      cb(nil, err)
      return
    end
    local list = result
    if type(result) == 'table' and result.changes then
      list = result.changes
    end
    if type(list) ~= 'table' or list == vim.NIL then
      list = {}
    end
    cb(list)
  end)
end

--- Recounts pending changes for the status line.
function M.refresh_count(session, cb)
  M.fetch(session, { status = 'pending' }, function(list)
    if list then
      session.pending = #list
      util.redraw_status()
    end
    if cb then
      cb(list)
    end
  end)
end

-- Statuses that ask for a decision: pending proposals, conflicts and stale
-- ones to look at, and changes the server already wrote (reject reverses).
local REVIEW = { pending = true, conflict = true, stale = true, appliedUpstream = true }

--- The changes to review, pending first; cb(list, err).
function M.reviewable(session, cb)
  M.fetch(session, {}, function(all, err)
    if not all then
      cb(nil, err)
      return
    end
    -- smith lists oldest first; keep that order, pending ones first.
    local list, rest = {}, {}
    for _, c in ipairs(all) do
      if c.status == 'pending' then
        table.insert(list, c)
      elseif REVIEW[c.status] then
        table.insert(rest, c)
      end
    end
    vim.list_extend(list, rest)
    cb(list)
  end)
end

--- Fills the quickfix list with every hunk of the changes to review.
function M.show_list(session, open_preview)
  M.reviewable(session, function(list, err)
    if not list then
      util.error('smith: listing changes failed: %s', util.errmsg(err))
      return
    end
    local items = {}
    for _, c in ipairs(list) do
      local file = util.join(session.root, c.path)
      if #(c.hunks or {}) == 0 then
        local text = string.format('[%s] %s %s', c.id, c.kind, c.status)
        table.insert(items, { filename = file, lnum = 1, col = 1, text = text })
      end
      for _, h in ipairs(c.hunks or {}) do
        table.insert(items, {
          filename = file,
          lnum = hunk_start(h),
          col = 1,
          text = string.format('[%s/%s] %s %s', c.id, h.id, h.status, h.header),
        })
      end
    end
    vim.fn.setqflist({}, ' ', { title = QF_TITLE, items = items })
    if #list == 0 then
      util.info('smith: no changes to review')
      return
    end
    vim.cmd('botright copen')
    vim.cmd('wincmd p')
    if open_preview then
      M.preview(session, list[1].id)
    end
  end)
end

--- The change id of the quickfix entry under the cursor, when the current
--- window shows smith's quickfix list.
function M.change_under_cursor()
  if vim.bo.buftype ~= 'quickfix' then
    return nil
  end
  local info = vim.fn.getqflist({ title = 0 })
  if info.title ~= QF_TITLE then
    return nil
  end
  local item = vim.fn.getqflist()[api.nvim_win_get_cursor(0)[1]]
  return item and item.text:match('^%[([^/%]]+)')
end

-- Preview buffers by change id.
local previews = {}

local function map(buf, lhs, fn, desc)
  if lhs then
    vim.keymap.set('n', lhs, fn, { buffer = buf, nowait = true, silent = true, desc = desc })
  end
end

local function key_help()
  local k = config.options.keymaps.preview or {}
  local parts = {}
  for _, e in ipairs({
    { 'accept_hunk', 'accept hunk' },
    { 'reject_hunk', 'reject hunk' },
    { 'accept_all', 'accept all' },
    { 'reject_all', 'reject all' },
    { 'next_hunk', 'next' },
    { 'prev_hunk', 'prev' },
    { 'open_file', 'open file' },
    { 'close', 'close' },
  }) do
    if k[e[1]] then
      table.insert(parts, k[e[1]] .. ' ' .. e[2])
    end
  end
  return '# ' .. table.concat(parts, ' · ')
end

local function render(buf, change, preview, problem)
  local lines = {
    string.format('# change %s · %s %s · %s', change.id, change.kind or 'modify', change.path, change.status),
    key_help(),
  }
  if change.reason and change.reason ~= '' then
    table.insert(lines, '# ' .. change.reason)
  end
  local summary = {}
  for _, h in ipairs(change.hunks or {}) do
    table.insert(summary, h.id .. ' ' .. h.status)
  end
  if #summary > 0 then
    table.insert(lines, '# hunks: ' .. table.concat(summary, ' · '))
  end
  if problem then
    table.insert(lines, '# no preview: ' .. problem:gsub('\n', ' '))
  end
  -- The hunks as smith sends them, each text starting at a line the
  -- buffer knows: the preview's hunks, or the change's own when there is
  -- no preview (undone, in conflict).
  local hunks = preview and preview.hunks
  if type(hunks) ~= 'table' or hunks == vim.NIL then
    hunks = change.hunks or {}
  end
  local path = change.path or ''
  table.insert(lines, '--- a/' .. path)
  table.insert(lines, '+++ b/' .. path)
  local located = {}
  for _, h in ipairs(hunks) do
    local text = vim.split(h.text or '', '\n', { plain = true })
    if text[#text] == '' then
      table.remove(text)
    end
    if #text > 0 then
      table.insert(located, { lnum = #lines + 1, hunk = h })
      vim.list_extend(lines, text)
    end
  end
  vim.bo[buf].modifiable = true
  api.nvim_buf_set_lines(buf, 0, -1, false, lines)
  vim.bo[buf].modifiable = false
  vim.bo[buf].modified = false
  api.nvim_buf_clear_namespace(buf, ns, 0, -1)
  for _, l in ipairs(located) do
    local hl = STATUS_HL[l.hunk.status] or 'Comment'
    api.nvim_buf_set_extmark(buf, ns, l.lnum - 1, 0, {
      virt_text = { { string.format('[%s %s]', l.hunk.id, l.hunk.status), hl } },
      virt_text_pos = 'eol',
    })
  end
  previews[change.id].change = change
  previews[change.id].located = located
end

local function state(buf)
  for id, p in pairs(previews) do
    if p.buf == buf then
      return p, id
    end
  end
end

-- The hunk entry under (or above) the cursor; the first one above the diff.
local function current(p)
  local row = api.nvim_win_get_cursor(0)[1]
  local found = p.located[1]
  for _, l in ipairs(p.located) do
    if l.lnum <= row then
      found = l
    end
  end
  return found
end

local function jump(p, dir)
  local row = api.nvim_win_get_cursor(0)[1]
  local target
  if dir > 0 then
    for _, l in ipairs(p.located) do
      if l.lnum > row then
        target = l
        break
      end
    end
  else
    for i = #p.located, 1, -1 do
      if p.located[i].lnum < row then
        target = p.located[i]
        break
      end
    end
  end
  if target then
    api.nvim_win_set_cursor(0, { target.lnum, 0 })
  end
end

--- Re-reads a change and its preview and redraws its buffer. cb(change)
--- runs in every case (change is nil when there is no preview or it failed).
function M.refresh(session, change_id, cb)
  cb = cb or function() end
  local p = previews[change_id]
  if not p or not api.nvim_buf_is_valid(p.buf) then
    cb(nil)
    return
  end
  M.fetch(session, {}, function(list, err)
    if not list then
      util.error('smith: reading change %s failed: %s', change_id, util.errmsg(err))
      cb(nil)
      return
    end
    local change
    for _, c in ipairs(list) do
      if c.id == change_id then
        change = c
      end
    end
    if not change then
      util.warn('smith: change %s is gone', change_id)
      cb(nil)
      return
    end
    session:request('smith/change/preview', { changeId = change_id }, function(perr, preview)
      -- A change that cannot be previewed any more (undone, in conflict)
      -- says why in the buffer rather than in a message: this also runs
      -- in the background on smith/changeUpdated.
      if api.nvim_buf_is_valid(p.buf) then
        render(p.buf, change, not perr and preview or nil, perr and util.errmsg(perr))
      end
      cb(change)
    end)
  end)
end

-- Sends apply or reject for a change (all hunks when hunk_ids is nil).
local function decide(session, method, change_id, hunk_ids, cb)
  local params = { changeId = change_id }
  if hunk_ids then
    params.hunks = hunk_ids
  end
  session:request(method, params, function(err, result)
    if err then
      util.error('smith: %s %s failed: %s', method:match('[^/]+$'), change_id, util.errmsg(err))
    end
    M.refresh(session, change_id, function()
      M.refresh_count(session)
      if cb then
        cb(err, result)
      end
    end)
  end)
end

--- Accepts hunks of a change (all when hunk_ids is nil).
function M.accept(session, change_id, hunk_ids, cb)
  decide(session, 'smith/change/apply', change_id, hunk_ids, cb)
end

--- Rejects hunks of a change (all when hunk_ids is nil).
function M.reject(session, change_id, hunk_ids, cb)
  decide(session, 'smith/change/reject', change_id, hunk_ids, cb)
end

-- The line of the file where a hunk first changes something: the start
-- of its range (hunk_start) moved past the context lines its text begins
-- with (the text's first line is its header).
local function first_changed_line(hunk)
  local line = hunk_start(hunk)
  local text = vim.split(hunk.text or '', '\n', { plain = true })
  for i = 2, #text do
    if text[i]:sub(1, 1) ~= ' ' then
      break
    end
    line = line + 1
  end
  return line
end

local function open_file(session, p)
  local l = current(p)
  local file = util.join(session.root, p.change.path)
  local line = l and l.hunk and first_changed_line(l.hunk) or 1
  if #api.nvim_tabpage_list_wins(0) > 1 then
    vim.cmd('wincmd p')
  else
    vim.cmd('split')
  end
  vim.cmd('edit ' .. vim.fn.fnameescape(file))
  pcall(api.nvim_win_set_cursor, 0, { math.min(line, api.nvim_buf_line_count(0)), 0 })
end

local function setup_keymaps(session, buf, change_id)
  local k = config.options.keymaps.preview or {}
  local function with_hunk(fn)
    return function()
      local p = previews[change_id]
      local l = p and current(p)
      if not l or not l.hunk then
        util.warn('smith: no hunk under the cursor')
        return
      end
      fn(l.hunk)
    end
  end
  map(buf, k.accept_hunk, with_hunk(function(h)
    M.accept(session, change_id, { h.id })
  end), 'smith: accept the hunk under the cursor')
  map(buf, k.reject_hunk, with_hunk(function(h)
    M.reject(session, change_id, { h.id })
  end), 'smith: reject the hunk under the cursor')
  map(buf, k.accept_all, function()
    M.accept(session, change_id, nil)
  end, 'smith: accept every hunk')
  map(buf, k.reject_all, function()
    M.reject(session, change_id, nil)
  end, 'smith: reject every hunk')
  map(buf, k.next_hunk, function()
    jump(previews[change_id], 1)
  end, 'smith: next hunk')
  map(buf, k.prev_hunk, function()
    jump(previews[change_id], -1)
  end, 'smith: previous hunk')
  map(buf, k.open_file, function()
    open_file(session, previews[change_id])
  end, 'smith: open the file at the hunk')
  map(buf, k.next_change, function()
    M.cycle(session, change_id, 1)
  end, 'smith: preview the next pending change')
  map(buf, k.prev_change, function()
    M.cycle(session, change_id, -1)
  end, 'smith: preview the previous pending change')
  map(buf, k.refresh, function()
    M.refresh(session, change_id)
  end, 'smith: redraw the preview')
  map(buf, k.close, function()
    if #api.nvim_list_wins() > 1 then
      api.nvim_win_close(0, false)
    else
      api.nvim_buf_delete(buf, { force = true })
    end
  end, 'smith: close the preview')
end

--- Opens (or reuses) the preview buffer of a change; cb(buf) once drawn.
function M.preview(session, change_id, cb)
  local p = previews[change_id]
  if not p or not api.nvim_buf_is_valid(p.buf) then
    local buf = api.nvim_create_buf(false, true)
    pcall(api.nvim_buf_set_name, buf, 'smith://change/' .. change_id)
    vim.bo[buf].buftype = 'nofile'
    vim.bo[buf].bufhidden = 'wipe'
    vim.bo[buf].swapfile = false
    vim.bo[buf].filetype = 'diff'
    vim.bo[buf].modifiable = false
    api.nvim_buf_set_var(buf, 'smith_root', session.root)
    p = { buf = buf, located = {}, change = { id = change_id, path = '' } }
    previews[change_id] = p
    api.nvim_create_autocmd('BufWipeout', {
      buffer = buf,
      callback = function()
        if previews[change_id] and previews[change_id].buf == buf then
          previews[change_id] = nil
        end
      end,
    })
    setup_keymaps(session, buf, change_id)
  end
  local win
  for _, w in ipairs(api.nvim_tabpage_list_wins(0)) do
    if api.nvim_win_get_buf(w) == p.buf then
      win = w
    end
  end
  if win then
    api.nvim_set_current_win(win)
  else
    vim.cmd('botright split')
    api.nvim_win_set_buf(0, p.buf)
  end
  M.refresh(session, change_id, function()
    if p.located[1] and api.nvim_get_current_buf() == p.buf then
      -- Start on the first hunk still pending.
      local target = p.located[1]
      for _, l in ipairs(p.located) do
        if l.hunk.status == 'pending' then
          target = l
          break
        end
      end
      api.nvim_win_set_cursor(0, { target.lnum, 0 })
    end
    if cb then
      cb(p.buf)
    end
  end)
end

--- Moves the preview to the next (dir=1) or previous pending change.
function M.cycle(session, change_id, dir)
  M.reviewable(session, function(list)
    if not list or #list == 0 then
      util.info('smith: no changes to review')
      return
    end
    local idx = 0
    for i, c in ipairs(list) do
      if c.id == change_id then
        idx = i
      end
    end
    local nxt = list[((idx - 1 + dir) % #list) + 1]
    if nxt.id ~= change_id then
      M.preview(session, nxt.id)
    end
  end)
end

--- Redraws open previews after smith/changeUpdated.
function M.on_updated(session, params)
  local change = params.change or params
  if change and change.id and previews[change.id] then
    M.refresh(session, change.id)
  end
  M.refresh_count(session)
end

--- The preview state of a buffer (tests, statusline helpers).
function M.preview_state(buf)
  return state(buf)
end

return M
