// The demo's Node.js crawler (the native addon): same behaviour as crawl.py.
import { createRequire } from 'node:module'

const require = createRequire(import.meta.url)
const { Queue } = require(process.env.CRAWLQ_JS_MODULE)
const origins = process.env.SITE_ORIGINS.split(',')
const q = await Queue.connect(process.env.REDIS_URL, process.env.CRAWLQ_QUEUE, { hostDelayMs: 100, maxAttempts: 2, backoff: 'fixed', backoffBaseMs: 200, seenCache: 100000 })
let fetched = 0
let failed = 0
for (;;) {
  for await (const lease of q.work({ max: 1, waitMs: 2000, stopWhenEmpty: true })) {
    let res
    try {
      // the header tells the demo's web server when the queue handed this URL out
      const headers = { 'X-Crawlq-Leased-At': String(lease.leasedAt) }
      res = await fetch(lease.url, { headers, signal: AbortSignal.timeout(5000) })
    } catch (err) {
      await q.nack(lease, { reason: String(err) })
      failed++
      continue
    }
    if (!res.ok) {
      await q.nack(lease, { retry: res.status >= 500, reason: `HTTP ${res.status}` })
      failed++
      continue
    }
    const links = [...(await res.text()).matchAll(/href="([^"#]+)"/g)].map(m => new URL(m[1], lease.url).href)
    // the page's ack and its links in one round trip; links the cache knows cost no Redis work
    await q.ackWithLinks(lease, links.filter(link => origins.some(origin => link.startsWith(origin))))
    fetched++
  }
  const { pending, leased } = await q.stats()
  if (pending === 0 && leased === 0) break
}
console.log(JSON.stringify({ lang: 'node', fetched, failed }))
await q.close()
