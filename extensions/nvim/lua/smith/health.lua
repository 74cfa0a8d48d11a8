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
      'install smith from a checkout of the smith repository: CGO_ENABLED=0 go install ./cmd/smith (with $(go env GOPATH)/bin on PATH)',
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
  if type(result) ~= 'table' then
    report.warn('smith/status answered ' .. vim.inspect(result))
    return
  end
  local where = result.upstream or '?'
  if result.reachable then
    local dialect = result.dialect and result.dialect ~= '' and (' (dialect ' .. result.dialect .. ')') or ''
    report.ok(string.format('upstream %s answers%s', where, dialect))
  else
    report.error(string.format('upstream %s does not answer: %s', where, result.error or 'no reason given'), {
      'start the chat server, or point smith at one: '
        .. "setup{cmd = {'smith', 'serve', '--upstream', 'http://127.0.0.1:8765'}}",
      'smith upstream --workspace . runs an offline one',
    })
  end
  if result.pendingChanges and result.pendingChanges > 0 then
    report.info(string.format('%d pending change(s): :SmithChanges', result.pendingChanges))
  end
end

return M
