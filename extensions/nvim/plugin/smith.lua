-- smith.nvim commands. They load the plugin on first use; setup() is
-- optional (the defaults apply until it is called).
if vim.g.loaded_smith then
  return
end
vim.g.loaded_smith = true

local function smith()
  local m = require('smith')
  m._ensure_setup()
  return m
end

local cmd = vim.api.nvim_create_user_command

cmd('Smith', function(o)
  local range = o.range > 0 and { o.line1, o.line2 } or nil
  if o.args == '' then
    smith().open_chat()
    smith().prompt()
  else
    smith().chat(o.args, { range = range })
  end
end, { nargs = '*', range = true, desc = 'smith: send a message (the range is sent as the selection)' })

cmd('SmithChat', function()
  smith().open_chat()
end, { desc = 'smith: open the chat buffer' })

cmd('SmithCancel', function()
  smith().cancel()
end, { desc = 'smith: cancel the running turn' })

cmd('SmithDialogs', function()
  smith().dialogs()
end, { desc = 'smith: pick, create, rename or delete a dialog' })

cmd('SmithChanges', function()
  smith().changes()
end, { desc = 'smith: list pending changes (quickfix) and preview the first' })

cmd('SmithPreview', function(o)
  smith().preview(o.args ~= '' and o.args or nil)
end, { nargs = '?', desc = 'smith: preview a change (id, quickfix entry, or the first pending)' })

cmd('SmithUndo', function(o)
  smith().undo(o.args ~= '' and o.args or nil)
end, { nargs = '?', desc = 'smith: undo a change (default: the last applied)' })

cmd('SmithSession', function(o)
  smith().session_action(o.args ~= '' and o.args or nil)
end, {
  nargs = '?',
  complete = function()
    return { 'approve', 'reset' }
  end,
  desc = 'smith: what an AgentSmithy server wrote itself; approve or reset it',
})

cmd('SmithStop', function()
  smith().stop()
end, { desc = 'smith: stop the daemons' })

-- Buffers opened before the first command are attached when a daemon starts;
-- later ones through the autocmds that setup() installs.
