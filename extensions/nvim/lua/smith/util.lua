-- Small helpers shared by the smith modules: paths, messages, buffers.
local M = {}

local uv = vim.uv or vim.loop

--- An absolute path without a trailing slash and with symlinks resolved, so
--- that roots and buffer names compare equal.
function M.normalize(path)
  local abs = vim.fn.fnamemodify(path, ':p')
  local real = uv.fs_realpath(abs) or abs
  if #real > 1 then
    real = real:gsub('/+$', '')
  end
  return real
end

--- Whether path lies inside dir (or is dir).
function M.is_under(path, dir)
  if path == dir then
    return true
  end
  local prefix = dir == '/' and '/' or dir .. '/'
  return path:sub(1, #prefix) == prefix
end

--- The path of file relative to root when it lies inside, else nil.
function M.relative(path, root)
  if not M.is_under(path, root) or path == root then
    return nil
  end
  local prefix = root == '/' and '/' or root .. '/'
  return path:sub(#prefix + 1)
end

--- Joins a workspace-relative smith path to the root.
function M.join(root, rel)
  if rel:sub(1, 1) == '/' then
    return rel
  end
  return root .. '/' .. rel
end

local function notify(level, fmt, ...)
  local msg = select('#', ...) > 0 and string.format(fmt, ...) or fmt
  vim.schedule(function()
    vim.notify(msg, level)
  end)
end

function M.error(fmt, ...)
  notify(vim.log.levels.ERROR, fmt, ...)
end

function M.warn(fmt, ...)
  notify(vim.log.levels.WARN, fmt, ...)
end

function M.info(fmt, ...)
  notify(vim.log.levels.INFO, fmt, ...)
end

--- A readable message for an LSP error table or string.
function M.errmsg(err)
  if type(err) == 'table' then
    local msg = err.message or vim.inspect(err)
    if err.data and type(err.data) == 'table' and err.data.hint then
      msg = msg .. ' (' .. err.data.hint .. ')'
    end
    return msg
  end
  return tostring(err)
end

--- The length of a line in an LSP position encoding.
function M.columns(line, encoding)
  if encoding == 'utf-8' then
    return #line
  end
  if vim.fn.has('nvim-0.11') == 1 then
    -- 0.11 takes the encoding and deprecates the two-result form.
    return vim.str_utfindex(line, encoding)
  end
  local utf32, utf16 = vim.str_utfindex(line)
  return encoding == 'utf-32' and utf32 or utf16
end

--- Redraws status lines and tells User autocmds that the state changed.
function M.redraw_status()
  vim.schedule(function()
    pcall(vim.cmd, 'redrawstatus!')
    pcall(vim.cmd, 'silent doautocmd <nomodeline> User SmithStatus')
  end)
end

--- The loaded buffer holding path (absolute), or nil.
function M.find_buf(path)
  for _, buf in ipairs(vim.api.nvim_list_bufs()) do
    if vim.api.nvim_buf_is_loaded(buf) then
      local name = vim.api.nvim_buf_get_name(buf)
      if name ~= '' and vim.bo[buf].buftype == '' and M.normalize(name) == path then
        return buf
      end
    end
  end
end

--- Writes a buffer that smith edited, so that buffer and disk agree. The
--- bang skips the "file changed since reading" question that a write by
--- smith behind the buffer would otherwise raise.
function M.write_buf(buf)
  if not vim.api.nvim_buf_is_loaded(buf) or not vim.bo[buf].modified then
    return
  end
  local ok, err = pcall(vim.api.nvim_buf_call, buf, function()
    vim.cmd('silent lockmarks write!')
  end)
  if not ok then
    M.warn('smith: could not write %s after smith edited it: %s', vim.api.nvim_buf_get_name(buf), err)
  end
end

--- Re-reads a buffer whose file smith wrote on disk. An unmodified buffer
--- reloads (keeping undo, see 'undoreload'); a modified one is left alone
--- with a warning, since reloading would lose the user's edits.
function M.reload_buf(buf, path)
  if not vim.api.nvim_buf_is_loaded(buf) then
    return
  end
  if vim.bo[buf].modified then
    M.warn('smith: %s changed on disk but the buffer has unsaved changes; :e! reloads it', path)
    return
  end
  local ok, err = pcall(vim.api.nvim_buf_call, buf, function()
    vim.cmd('silent edit')
  end)
  if not ok then
    M.warn('smith: could not reload %s: %s', path, err)
  end
end

return M
