'use strict'
// Interop worker (JavaScript: the native addon, or the WebAssembly build when
// CRAWLQ_JS_MODULE points at it). Same modes, behaviour and ledger as worker.py.
const fs = require('node:fs')
const path = require('node:path')
const crawlq = require(path.resolve(process.env.CRAWLQ_JS_MODULE))
const [mode, url, name, ledgerPath, slowMs] = process.argv.slice(2)
const sleep = ms => new Promise(resolve => setTimeout(resolve, ms))

async function main () {
  const q = await crawlq.Queue.connect(url, name, { leaseTtlMs: 3000, hostDelayMs: 20 })
  if (mode === 'seed') {
    await sleep(Math.max(0, Number(process.env.CRAWLQ_START_AT ?? 0) - Date.now()))
    const report = await q.seed(fs.readFileSync(ledgerPath, 'utf8').split('\n').slice(0, -1))
    console.log(JSON.stringify({ added: report.added, duplicates: report.duplicates }))
    await q.close()
    return
  }
  if (mode === 'bytes') {
    const [lease] = await q.lease({ max: 1, waitMs: 2000 })
    const body = lease.payload.body
    const expected = Buffer.from(Array.from({ length: 256 }, (_, i) => i))
    await q.nack(lease, { retry: false, payload: { body: Buffer.from(expected).reverse(), by: process.env.CRAWLQ_LANG } })
    console.log(JSON.stringify({ ok: body instanceof Uint8Array && Buffer.from(body).equals(expected) }))
    await q.close()
    return
  }
  const ledger = fs.openSync(ledgerPath, 'a')
  const log = entry => fs.writeSync(ledger, JSON.stringify(entry) + '\n')
  let idle = 0
  for (;;) {
    const leases = await q.lease({ max: 5, waitMs: 1000 })
    if (leases.length === 0) {
      const stats = await q.stats()
      if (++idle >= 2 && stats.pending === 0 && stats.leased === 0) break
      continue
    }
    idle = 0
    for (const l of leases) log({ ev: 'lease', id: l.id, url: l.url, token: l.token, host: l.host, at: l.leasedAt, exp: l.expiresAt })
    for (const l of leases) {
      await sleep(Number(slowMs) + Math.random() * 3)
      if (l.url && l.url.endsWith('/poison')) {
        log({ ev: 'nack', id: l.id, token: l.token, outcome: await q.nack(l, { retry: false, reason: 'forced by the scenario' }) })
      } else {
        log({ ev: 'ack', id: l.id, token: l.token, ok: await q.ack(l) })
      }
    }
  }
  fs.closeSync(ledger)
  await q.close()
  console.log(`js worker ${process.pid} done`)
}

main().catch(err => { console.error(err); process.exit(1) })
