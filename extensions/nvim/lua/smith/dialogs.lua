-- :SmithDialogs: pick, create, rename or delete a dialog with vim.ui.select
-- and vim.ui.input (so that telescope, fzf-lua or dressing.nvim style
-- pickers take over when installed).
local util = require('smith.util')
local chat = require('smith.chat')

local M = {}

local function list_of(result)
  if type(result) == 'table' and result.dialogs then
    return result.dialogs, result.current or result.currentId
  end
  if type(result) == 'table' then
    return result, nil
  end
  return {}, nil
end

--- Lists dialogs; cb(dialogs, current_id, err).
function M.fetch(session, cb)
  session:request('smith/dialogs', {}, function(err, result)
    if err then
      cb(nil, nil, err)
      return
    end
    local dialogs, current = list_of(result)
    cb(dialogs, current)
  end)
end

local function title_of(d)
  local t = d.title or d.name
  if t == nil or t == vim.NIL or t == '' then
    t = '(untitled)'
  end
  return t
end

--- Makes dialog_id the session's dialog and shows its history.
function M.select(session, dialog_id, cb)
  session:request('smith/dialog/select', { dialogId = dialog_id }, function(err)
    if err then
      util.error('smith: selecting dialog %s failed: %s', dialog_id, util.errmsg(err))
      if cb then
        cb(err)
      end
      return
    end
    session.dialog_id = dialog_id
    session:request('smith/history', { dialogId = dialog_id }, function(herr, result)
      local messages = {}
      if not herr and type(result) == 'table' then
        messages = result.events or result.messages or result
      end
      chat.history(session, messages)
      util.redraw_status()
      if cb then
        cb(nil)
      end
    end)
  end)
end

--- Creates a dialog (title optional) and selects it.
function M.create(session, title, cb)
  local params = {}
  if title and title ~= '' then
    params.title = title
  end
  session:request('smith/dialog/new', params, function(err, result)
    if err then
      util.error('smith: creating a dialog failed: %s', util.errmsg(err))
      if cb then
        cb(err)
      end
      return
    end
    local id = type(result) == 'table' and (result.id or result.dialogId or (result.dialog and result.dialog.id))
      or result
    session.dialog_id = id
    chat.clear(session)
    util.redraw_status()
    if cb then
      cb(nil, id)
    end
  end)
end

function M.rename(session, dialog_id, title, cb)
  session:request('smith/dialog/rename', { dialogId = dialog_id, title = title }, function(err)
    if err then
      util.error('smith: renaming dialog %s failed: %s', dialog_id, util.errmsg(err))
    end
    if cb then
      cb(err)
    end
  end)
end

function M.delete(session, dialog_id, cb)
  session:request('smith/dialog/delete', { dialogId = dialog_id }, function(err)
    if err then
      util.error('smith: deleting dialog %s failed: %s', dialog_id, util.errmsg(err))
    elseif session.dialog_id == dialog_id then
      session.dialog_id = nil
      chat.clear(session)
    end
    if cb then
      cb(err)
    end
  end)
end

local function actions(session, d)
  local id = d.id or d.dialogId
  vim.ui.select({ 'Open', 'Rename', 'Delete' }, { prompt = 'Dialog ' .. title_of(d) }, function(choice)
    if choice == 'Open' then
      M.select(session, id, function()
        chat.open(session)
      end)
    elseif choice == 'Rename' then
      vim.ui.input({ prompt = 'New title: ', default = d.title or '' }, function(title)
        if title and title ~= '' then
          M.rename(session, id, title)
        end
      end)
    elseif choice == 'Delete' then
      vim.ui.select({ 'Delete', 'Keep' }, { prompt = 'Delete "' .. title_of(d) .. '"?' }, function(yes)
        if yes == 'Delete' then
          M.delete(session, id)
        end
      end)
    end
  end)
end

--- The :SmithDialogs picker.
function M.pick(session)
  M.fetch(session, function(dialogs, current, err)
    if not dialogs then
      util.error('smith: listing dialogs failed: %s', util.errmsg(err))
      return
    end
    current = current or session.dialog_id
    local items = { { new = true } }
    vim.list_extend(items, dialogs)
    vim.ui.select(items, {
      prompt = 'smith dialogs',
      format_item = function(d)
        if d.new then
          return '+ new dialog'
        end
        local id = d.id or d.dialogId
        local mark = (id == current) and ' (current)' or ''
        return string.format('%s  [%s]%s', title_of(d), id, mark)
      end,
    }, function(choice)
      if not choice then
        return
      end
      if choice.new then
        vim.ui.input({ prompt = 'Title (optional): ' }, function(title)
          if title == nil then
            return
          end
          M.create(session, title, function(cerr)
            if not cerr then
              chat.open(session)
            end
          end)
        end)
      else
        actions(session, choice)
      end
    end)
  end)
end

return M
