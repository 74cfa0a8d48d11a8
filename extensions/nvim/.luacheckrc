-- luacheck settings for smith.nvim: `luacheck .` from extensions/nvim
-- (Debian: apt-get install lua-check).
std = 'luajit'
-- vim.bo, vim.wo, vim.o and friends are written to: vim is a global, not read-only.
globals = { 'vim' }
max_line_length = 120
exclude_files = { 'doc/' }
