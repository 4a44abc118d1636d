'use strict'
// Fault-suite worker (JavaScript: the native addon, or the WebAssembly build when
// CRAWLQ_JS_MODULE points at it). Same behaviour and ledger as worker.py, and the same crawl
// when CRAWLQ_FAULT_CRAWL is set (its tasks are async loops on one queue).
const fs = require('node:fs')
const path = require('node:path')
const crawlq = require(path.resolve(process.env.CRAWLQ_JS_MODULE))
const [url, name, ledgerPath, stopFile, slowMs] = process.argv.slice(2)
const options = JSON.parse(process.env.CRAWLQ_FAULT_OPTIONS)
const crawl = JSON.parse(process.env.CRAWLQ_FAULT_CRAWL || 'null')
const sleep = ms => new Promise(resolve => setTimeout(resolve, ms))

// The links of page i of the crawl, as worker.py's `links`.
function links (pageUrl) {
  const [n, s] = [crawl.items, crawl.seeds]
  const i = Number(pageUrl.slice(pageUrl.lastIndexOf('/') + 1))
  const domain = new URL(pageUrl).hostname.split('.').slice(1).join('.')
  const found = [2 * i + 1, 2 * i + 2, 0, s - 1, i % s, (i + 3) % s, (i * 5) % s]
  return found.filter(k => k < n).map(k => `http://h${k % crawl.hosts}.${domain}/page/${k}`)
}
const camel = {
  lease_ttl: ['leaseTtlMs', 1000],
  command_timeout: ['commandTimeoutMs', 1000],
  connect_timeout: ['connectTimeoutMs', 1000],
  max_attempts: ['maxAttempts', 1],
  seen_cache: ['seenCache', 1],
  answer_linger: ['answerLingerMs', 1000]
}

async function main () {
  const opts = {}
  for (const [k, v] of Object.entries(options)) opts[camel[k][0]] = Math.round(v * camel[k][1])
  const ledger = fs.openSync(ledgerPath, 'a')
  const log = entry => fs.writeSync(ledger, JSON.stringify(entry) + '\n')
  const logLeases = leases => {
    for (const l of leases) log({ ev: 'lease', id: l.id, url: l.url, token: l.token, at: l.leasedAt, exp: l.expiresAt })
  }
  if (crawl) {
    let q = null
    while (!q && !fs.existsSync(stopFile)) {
      try {
        q = await crawlq.Queue.connect(url, name, opts)
      } catch (err) {
        log({ ev: 'error', code: err.code, during: 'connect', message: String(err.message).slice(0, 200) })
        await sleep(100)
      }
    }
    const task = async () => {
      let held = null
      while (!fs.existsSync(stopFile)) {
        if (!held) {
          try {
            const leases = await q.lease({ max: 1, waitMs: 500 })
            logLeases(leases)
            held = leases[0] ?? null
          } catch (err) {
            log({ ev: 'error', code: err.code, during: 'lease', message: String(err.message).slice(0, 200) })
            await sleep(100)
          }
          continue
        }
        await sleep(Number(slowMs))
        try {
          const answer = await q.ackWithLinksAndLease(held, links(held.url), { max: 1, waitMs: 500 })
          log({ ev: 'ack', id: held.id, token: held.token, ok: answer.acked })
          logLeases(answer.leases)
          held = answer.leases[0] ?? null
        } catch (err) {
          // the page, its links and the next lease may or may not have been applied
          log({ ev: 'ack', id: held.id, token: held.token, ok: null, code: err.code })
          held = null
          await sleep(100)
        }
      }
    }
    await Promise.all(Array.from({ length: crawl.tasks }, task))
    fs.closeSync(ledger)
    if (q) await q.close()
    return
  }
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
    logLeases(leases)
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
