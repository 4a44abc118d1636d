// BullMQ, for bench/run.py. Same commands and output as crawlq-bench (bench/src/main.rs):
//   bullmq.mjs seed  <redis-url> <queue> <file>     addBulk, 1000 jobs per call, jobId = SHA-1
//                                                     of the URL (BullMQ's de-duplication)
//   bullmq.mjs seed-kept <redis-url> <queue> <file>  the same, completed jobs kept (their jobIds
//                                                     keep de-duplicating: the crawl's pool)
//   bullmq.mjs drain <redis-url> <queue> <concurrency> <expected>   a Worker with a no-op processor
//   bullmq.mjs crawl <redis-url> <queue> <concurrency> <pages-file>  a Worker whose processor
//                                                     adds the page's links (one line of the file,
//                                                     tab-separated) with addBulk, jobId dedupe
import { createHash } from 'node:crypto'
import { readFileSync } from 'node:fs'
import { Queue, Worker } from 'bullmq'

const now = () => Number(process.hrtime.bigint()) / 1e9
const [op, url, name, ...rest] = process.argv.slice(2)
const { hostname, port } = new URL(url)
const connection = { host: hostname, port: Number(port || 6379), maxRetriesPerRequest: null }

const jobOf = (u, keep) => ({
  name: 'crawl',
  data: { url: u },
  opts: { jobId: createHash('sha1').update(u).digest('hex'), removeOnComplete: !keep }
})

let items, seconds
if (op === 'seed' || op === 'seed-kept') {
  const urls = readFileSync(rest[0], 'utf8').split('\n').filter(Boolean)
  const queue = new Queue(name, { connection })
  await queue.waitUntilReady()
  // (the jobs this seed added: the queue may hold others already, a crawl's backlog)
  const before = await queue.count()
  const started = now()
  for (let i = 0; i < urls.length; i += 1000) {
    await queue.addBulk(urls.slice(i, i + 1000).map(u => jobOf(u, op === 'seed-kept')))
  }
  seconds = now() - started
  items = (await queue.count()) - before
  await queue.close()
} else if (op === 'crawl') {
  // each processed job takes the next line of links; completed jobs are kept, so a link to a
  // page crawled before is a duplicate jobId, as in the crawlq runners
  const concurrency = Number(rest[0])
  const pages = readFileSync(rest[1], 'utf8').split('\n').filter(Boolean).map(line => line.split('\t'))
  const queue = new Queue(name, { connection })
  await queue.waitUntilReady()
  let taken = 0
  let done = 0
  let last = 0
  let started
  const finished = new Promise(resolve => {
    const worker = new Worker(name, async () => {
      const links = pages[taken++]
      if (links) await queue.addBulk(links.map(u => jobOf(u, true)))
    }, { connection, concurrency, autorun: false })
    worker.on('completed', () => {
      done++
      last = now() - started
      if (done === pages.length) resolve(worker)
    })
    worker.waitUntilReady().then(() => {
      started = now()
      worker.run()
    })
  })
  const worker = await finished
  await worker.close()
  await queue.close()
  // (jobs that completed after the last page, before the worker closed, are not counted)
  items = Math.min(done, pages.length)
  seconds = last
} else {
  const [concurrency, expected] = rest.map(Number)
  let done = 0
  let last = 0
  let started
  const finished = new Promise(resolve => {
    const worker = new Worker(name, async () => {}, { connection, concurrency, autorun: false })
    worker.on('completed', () => {
      done++
      last = now() - started
      if (done === expected) resolve(worker)
    })
    worker.waitUntilReady().then(() => {
      started = now()
      worker.run()
    })
  })
  const worker = await finished
  await worker.close()
  items = done
  seconds = last
}
console.log(JSON.stringify({ items, seconds }))
process.exit(0)
