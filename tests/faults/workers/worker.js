'use strict'
// Fault-suite worker (JavaScript: the native addon, or the WebAssembly build when
// CRAWLQ_JS_MODULE points at it). Same behaviour and ledger as worker.py.
const fs = require('node:fs')
const path = require('node:path')
const crawlq = require(path.resolve(process.env.CRAWLQ_JS_MODULE))
const [url, name, ledgerPath, stopFile, slowMs] = process.argv.slice(2)
const options = JSON.parse(process.env.CRAWLQ_FAULT_OPTIONS)
const sleep = ms => new Promise(resolve => setTimeout(resolve, ms))
const camel = {
  lease_ttl: ['leaseTtlMs', 1000],
  command_timeout: ['commandTimeoutMs', 1000],
  connect_timeout: ['connectTimeoutMs', 1000],
  max_attempts: ['maxAttempts', 1]
}

async function main () {
  const opts = {}
  for (const [k, v] of Object.entries(options)) opts[camel[k][0]] = v * camel[k][1]
  const ledger = fs.openSync(ledgerPath, 'a')
  const log = entry => fs.writeSync(ledger, JSON.stringify(entry) + '\n')
  let q = null
  while (!fs.existsSync(stopFile)) {
    let leases
    try {
      q ??= await crawlq.Queue.connect(url, name, opts)
      leases = await q.lease({ max: 5, waitMs: 500 })
    } catch (err) {
      log({ ev: 'error', code: err.code, during: 'lease', message: String(err.message).slice(0, 200) })
      await sleep(100)
      continue
    }
    for (const l of leases) log({ ev: 'lease', id: l.id, url: l.url, token: l.token, at: l.leasedAt, exp: l.expiresAt })
    for (const l of leases) {
      await sleep(Number(slowMs))
      try {
        log({ ev: 'ack', id: l.id, token: l.token, ok: await q.ack(l) })
      } catch (err) {
        log({ ev: 'ack', id: l.id, token: l.token, ok: null, code: err.code })
      }
    }
  }
  fs.closeSync(ledger)
  if (q) await q.close()
}

main().catch(err => { console.error(err); process.exit(1) })
