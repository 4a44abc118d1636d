// BullMQ, for bench/run.py. Same commands and output as crawlq-bench (bench/src/main.rs):
//   bullmq.mjs seed  <redis-url> <queue> <file>     addBulk, 1000 jobs per call, jobId = SHA-1
//                                                     of the URL (BullMQ's de-duplication)
//   bullmq.mjs drain <redis-url> <queue> <concurrency> <expected>   a Worker with a no-op processor
import { createHash } from 'node:crypto'
import { readFileSync } from 'node:fs'
import { Queue, Worker } from 'bullmq'

const now = () => Number(process.hrtime.bigint()) / 1e9
const [op, url, name, ...rest] = process.argv.slice(2)
const { hostname, port } = new URL(url)
const connection = { host: hostname, port: Number(port || 6379), maxRetriesPerRequest: null }

let items, seconds
if (op === 'seed') {
  const urls = readFileSync(rest[0], 'utf8').split('\n').filter(Boolean)
  const queue = new Queue(name, { connection })
  await queue.waitUntilReady()
  const started = now()
  for (let i = 0; i < urls.length; i += 1000) {
    await queue.addBulk(urls.slice(i, i + 1000).map(u => ({
      name: 'crawl',
      data: { url: u },
      opts: { jobId: createHash('sha1').update(u).digest('hex'), removeOnComplete: true }
    })))
  }
  seconds = now() - started
  items = await queue.count()
  await queue.close()
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
