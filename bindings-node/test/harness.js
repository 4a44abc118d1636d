'use strict'
// Test harness: the module under test (chosen here, once, by CRAWLQ_JS_MODULE so another
// implementation of the same JS API can run this suite) and private redis-servers.

const { spawn, execFileSync } = require('node:child_process')
const fs = require('node:fs')
const net = require('node:net')
const os = require('node:os')
const path = require('node:path')

const modulePath = process.env.CRAWLQ_JS_MODULE
  ? path.resolve(process.env.CRAWLQ_JS_MODULE)
  : path.resolve(__dirname, '..')
const crawlq = require(modulePath)

function freePort () {
  return new Promise((resolve, reject) => {
    const srv = net.createServer()
    srv.listen(0, '127.0.0.1', () => {
      const { port } = srv.address()
      srv.close(() => resolve(port))
    })
    srv.on('error', reject)
  })
}

function canConnect (port) {
  return new Promise(resolve => {
    const s = net.connect(port, '127.0.0.1', () => { s.destroy(); resolve(true) })
    s.on('error', () => resolve(false))
  })
}

/** A redis-server owned by the tests: free port, no persistence. */
function startRedis (...extra) {
  return startRedisBinary('redis-server', ...extra)
}

/** startRedis with another redis-server binary (an older Redis). */
async function startRedisBinary (binary, ...extra) {
  for (let attempt = 0; attempt < 20; attempt++) {
    const port = await freePort()
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'crawlq-node-'))
    const child = spawn(binary, ['--port', String(port), '--bind', '127.0.0.1', '--save', '',
      '--appendonly', 'no', '--dir', dir, ...extra], { stdio: 'ignore' })
    let exited = false
    child.on('exit', () => { exited = true })
    const deadline = Date.now() + 5000
    while (Date.now() < deadline && !exited) {
      if (await canConnect(port)) {
        return {
          port,
          url: `redis://127.0.0.1:${port}/0`,
          cli: (...args) => execFileSync('redis-cli', ['-p', String(port), ...args]).toString().trim(),
          stop: () => new Promise(resolve => {
            if (exited) return resolve()
            child.once('exit', () => { fs.rmSync(dir, { recursive: true, force: true }); resolve() })
            child.kill('SIGKILL')
          })
        }
      }
      await new Promise(resolve => setTimeout(resolve, 20))
    }
    child.kill('SIGKILL')
  }
  throw new Error('could not start redis-server (apt-get install redis-server)')
}

let counter = 0
const uniqueName = prefix => `${prefix}-${process.pid}-${counter++}`

const T0 = 1_800_000_000_000

module.exports = { crawlq, modulePath, startRedis, startRedisBinary, uniqueName, T0 }
