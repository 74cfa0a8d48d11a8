-- :checkhealth smith — the binary, its version, and whether the daemon and
-- its upstream answer.
local M = {}

-- Neovim 0.7 has require('health').report_*, 0.8/0.9 vim.health.report_*,
-- 0.10+ vim.health.{start,ok,warn,error,info}.
local function reporter()
  local h = vim.health or require('health')
  return {
    start = h.start or h.report_start,
    ok = h.ok or h.report_ok,
    warn = h.warn or h.report_warn,
    error = h.error or h.report_error,
    info = h.info or h.report_info,
  }
end

function M.check()
  local report = reporter()
  local config = require('smith.config')
  local client = require('smith.client')
  report.start('smith: binary')
  local cmd = config.options.cmd
  if type(cmd) == 'function' then
    cmd = cmd(client.root_for())
  end
  if type(cmd) == 'string' then
    cmd = { cmd }
  end
  if type(cmd) ~= 'table' or not cmd[1] then
    report.error('setup{cmd=...} is not a command line', { "use cmd = {'smith', 'serve'}" })
    return
  end
  local bin = cmd[1]
  local path = vim.fn.exepath(bin)
  if path == '' then
    report.error(string.format("'%s' is not an executable on PATH", bin), {
      'install smith: go install github.com/smith-dev/smith/cmd/smith@latest',
      "or set require('smith').setup{cmd = {'/path/to/smith', 'serve'}}",
    })
    return
  end
  report.ok('binary: ' .. path)
  report.info('command line: ' .. table.concat(cmd, ' '))
  local out = vim.fn.system({ path, 'version' })
  if vim.v.shell_error == 0 then
    report.ok('version: ' .. vim.trim(out):gsub('\n', ' '))
  else
    report.warn('`smith version` failed: ' .. vim.trim(out))
  end

  report.start('smith: daemon and upstream')
  local root = client.root_for()
  report.info('workspace root: ' .. root)
  local s, err = client.ensure(root)
  if not s then
    report.error(err)
    return
  end
  local result, rerr = s:request_sync('smith/status', {})
  if rerr then
    report.error('smith/status failed: ' .. require('smith.util').errmsg(rerr))
    return
  end
  report.ok('smith serve answers')
  local up = type(result) == 'table' and result.upstream or nil
  if type(up) ~= 'table' then
    report.warn('smith/status did not describe the upstream: ' .. vim.inspect(result))
    return
  end
  local where = up.url or up.baseUrl or '?'
  local reachable = up.reachable
  if reachable == nil then
    reachable = up.ok
  end
  if reachable == nil then
    reachable = up.healthy
  end
  if reachable then
    local extra = {}
    for _, k in ipairs({ 'dialect', 'version', 'server' }) do
      if type(up[k]) == 'string' and up[k] ~= '' then
        table.insert(extra, k .. ' ' .. up[k])
      end
    end
    report.ok(string.format('upstream %s answers%s', where, #extra > 0 and (' (' .. table.concat(extra, ', ') .. ')') or ''))
  else
    report.error(string.format('upstream %s does not answer: %s', where, up.error or up.message or 'no reason given'), {
      'start it, or point smith at it: setup{cmd = {"smith", "serve", "--upstream", "http://127.0.0.1:8765"}}',
    })
  end
end

return M
