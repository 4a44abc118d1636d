// crawlq through the Node.js addon, or the WebAssembly build (CRAWLQ_JS_MODULE chooses), for
// bench/run.py. Same commands and output as crawlq-bench (bench/src/main.rs):
//   crawlq_js.mjs seed  <redis-url> <queue> <file>
//   crawlq_js.mjs drain <redis-url> <queue> <concurrency> <batch> <host-delay-ms> <expected>
//   crawlq_js.mjs drain-next ...   the same, each ack sent with the next lease (ackAndLease)
//   crawlq_js.mjs crawl <redis-url> <queue> <concurrency> <pages-file>   (bench/src/crawl.rs)
import { readFileSync } from 'node:fs'
import { createRequire } from 'node:module'

const { Queue } = createRequire(import.meta.url)(process.env.CRAWLQ_JS_MODULE)
const IDLE_WAIT_MS = 300 // an idle worker's last wait; the reported time ends at the last item
const SEEN_CACHE = 100_000 // entries of the known-seen cache (every crawlq runner the same)
const now = () => Number(process.hrtime.bigint()) / 1e9
const [op, url, queue, ...rest] = process.argv.slice(2)

let items, seconds
if (op === 'seed') {
  const urls = readFileSync(rest[0], 'utf8').split('\n').filter(Boolean)
  const q = await Queue.connect(url, queue)
  const started = now()
  items = (await q.seed(urls)).added
  seconds = now() - started
  await q.close()
} else if (op === 'crawl') {
  // worker w of c answers pages w, w + c, ... (a line each: the page's links), each with
  // ackWithLinksAndLease (links seeded, lease acked, next page leased: one call), the last
  // with ackWithLinks
  const concurrency = Number(rest[0])
  const pages = readFileSync(rest[1], 'utf8').split('\n').filter(Boolean).map(line => line.split('\t'))
  const q = await Queue.connect(url, queue, { seenCache: SEEN_CACHE })
  let done = 0
  let last = 0
  const started = now()
  const next = { max: 1, waitMs: IDLE_WAIT_MS }
  const worker = async (w) => {
    const mine = pages.filter((_, i) => i % concurrency === w)
    let [lease] = await q.lease(next)
    for (let i = 0; i < mine.length; i++) {
      let acked
      if (i + 1 === mine.length) {
        ({ acked } = await q.ackWithLinks(lease, mine[i]))
      } else {
        let leases
        ({ acked, leases } = await q.ackWithLinksAndLease(lease, mine[i], next))
        lease = leases[0]
      }
      done += acked ? 1 : 0
      last = now() - started
    }
  }
  await Promise.all(Array.from({ length: concurrency }, (_, w) => worker(w)))
  items = done
  seconds = last
  await q.close()
} else {
  const [concurrency, batch, delayMs, expected] = rest.map(Number)
  const q = await Queue.connect(url, queue, { hostDelayMs: delayMs })
  let done = 0
  let last = 0
  const started = now()
  const options = { max: batch, waitMs: IDLE_WAIT_MS }
  const worker = async () => {
    let leases = await q.lease(options)
    while (leases.length > 0) {
      const final = done + leases.length >= expected // the last items: a plain ack, no wait after them
      if (op === 'drain-next' && !final) {
        const next = await q.ackAndLease(leases, options)
        done += next.acked.filter(Boolean).length
        last = now() - started
        leases = next.leases
      } else {
        const acked = (await q.ack(leases)).filter(Boolean).length // awaited before `done` is read
        done += acked
        last = now() - started
        leases = final ? [] : await q.lease(options)
      }
    }
  }
  await Promise.all(Array.from({ length: concurrency }, worker))
  items = done
  seconds = last
  await q.close()
}
console.log(JSON.stringify({ items, seconds }))
