-- The whole Neovim configuration of the headless tests: this repository's
-- plugin and test helpers on 'runtimepath', nothing else.
local test_dir = vim.fn.fnamemodify(debug.getinfo(1, 'S').source:sub(2), ':p:h')
local plugin_dir = vim.fn.fnamemodify(test_dir, ':h')
vim.opt.runtimepath:prepend(plugin_dir)
package.path = test_dir .. '/?.lua;' .. package.path
vim.o.swapfile = false
vim.o.more = false
vim.o.shortmess = vim.o.shortmess .. 'WIcF'
