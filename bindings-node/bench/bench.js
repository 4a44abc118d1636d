'use strict'
// Seed 100,000 URLs and drain them with 16 concurrent workers through the Node addon, next
// to the same workload through the Rust API (core/examples/workload.rs), interleaved on one
// private redis-server. Build the addon in release mode first: `npm run build -- --release`.
//
//   node bench/bench.js [N] [ROUNDS]

const { execFileSync } = require('node:child_process')
const path = require('node:path')
const { crawlq, startRedis } = require('../test/harness.js')

const REPO = path.resolve(__dirname, '..', '..')
const WORKERS = 16
const BATCH = 100
const url = i => `https://www.host${String(i % 1000).padStart(4, '0')}.example.com/articles/2026/11/${String(i).padStart(7, '0')}/a-long-slug-for-the-title?ref=seed`

async function nodeRun (redisUrl, queue, n) {
  const q = await crawlq.Queue.connect(redisUrl, queue)
  const urls = Array.from({ length: n }, (_, i) => url(i))
  let started = process.hrtime.bigint()
  const report = await q.seed(urls)
  const seedS = Number(process.hrtime.bigint() - started) / 1e9
  if (report.added !== n) throw new Error(`seeded ${report.added}`)
  started = process.hrtime.bigint()
  const worker = async () => {
    let done = 0
    for (;;) {
      const leases = await q.lease({ max: BATCH, waitMs: 0 })
      if (leases.length === 0) return done
      done += (await q.ack(leases)).length
    }
  }
  const drained = (await Promise.all(Array.from({ length: WORKERS }, worker))).reduce((a, b) => a + b, 0)
  const drainS = Number(process.hrtime.bigint() - started) / 1e9
  if (drained !== n) throw new Error(`drained ${drained}`)
  return { seed_per_s: n / seedS, drain_per_s: n / drainS }
}

function rustRun (redisUrl, queue, n) {
  const out = execFileSync('cargo', ['run', '-q', '--release', '-p', 'crawlq', '--example', 'workload', '--',
    redisUrl, queue, String(n), String(WORKERS), String(BATCH)], { cwd: REPO })
  return JSON.parse(out.toString())
}

const median = xs => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]

async function main () {
  const n = Number(process.argv[2] ?? 100_000)
  const rounds = Number(process.argv[3] ?? 3)
  execFileSync('cargo', ['build', '-q', '--release', '-p', 'crawlq', '--example', 'workload'], { cwd: REPO })
  const redis = await startRedis()
  try {
    const results = { rust: [], node: [] }
    for (let r = 0; r < rounds; r++) {
      results.rust.push(rustRun(redis.url, `bench-rust-${r}`, n))
      results.node.push(await nodeRun(redis.url, `bench-node-${r}`, n))
      redis.cli('FLUSHALL')
    }
    console.log(`N = ${n} URLs over 1000 hosts, drain with ${WORKERS} concurrent workers x lease ${BATCH} + batch ack, ${rounds} interleaved rounds, medians (min-max)`)
    console.log('| through | seed items/s | drain items/s |\n|---|---|---|')
    for (const [name, runs] of Object.entries(results)) {
      const cell = key => { const v = runs.map(x => x[key]); return `${median(v).toFixed(0)} (${Math.min(...v).toFixed(0)}-${Math.max(...v).toFixed(0)})` }
      console.log(`| ${name} | ${cell('seed_per_s')} | ${cell('drain_per_s')} |`)
    }
    for (const key of ['seed_per_s', 'drain_per_s']) {
      console.log(`node/rust ${key}: ${(median(results.node.map(x => x[key])) / median(results.rust.map(x => x[key]))).toFixed(2)}`)
    }
  } finally {
    await redis.stop()
  }
}

main().catch(err => { console.error(err); process.exit(1) })
