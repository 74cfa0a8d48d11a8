-- luacheck settings for smith.nvim: `luacheck .` from extensions/nvim
-- (Debian: apt-get install lua-check).
std = 'luajit'
read_globals = { 'vim' }
max_line_length = 120
exclude_files = { 'doc/' }
