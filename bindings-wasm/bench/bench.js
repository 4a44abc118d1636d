'use strict'
// The WebAssembly build next to the native addon on one private redis-server, interleaved:
// seed 100,000 URLs and drain them with 16 concurrent workers (throughput), and sequential
// single calls (the per-operation overhead of building commands and decoding replies in
// wasm and going through a JavaScript client). Build both in release mode first:
//   (cd ../bindings-node && npm run build -- --release) && ./build.sh
//
//   node bench/bench.js [N] [ROUNDS]

const path = require('node:path')
const { startRedis } = require('../../bindings-node/test/harness.js')

const builds = {
  native: require(path.resolve(__dirname, '..', '..', 'bindings-node')),
  wasm: require(path.resolve(__dirname, '..', 'pkg'))
}
const WORKERS = 16
const BATCH = 100
const url = i => `https://www.host${String(i % 1000).padStart(4, '0')}.example.com/articles/2026/11/${String(i).padStart(7, '0')}/a-long-slug-for-the-title?ref=seed`
const seconds = start => Number(process.hrtime.bigint() - start) / 1e9

async function throughput (crawlq, redisUrl, queue, n) {
  const q = await crawlq.Queue.connect(redisUrl, queue)
  const urls = Array.from({ length: n }, (_, i) => url(i))
  let t = process.hrtime.bigint()
  await q.seed(urls)
  const seed = n / seconds(t)
  t = process.hrtime.bigint()
  const worker = async () => {
    for (;;) {
      const leases = await q.lease({ max: BATCH, waitMs: 0 })
      if (leases.length === 0) return
      await q.ack(leases)
    }
  }
  await Promise.all(Array.from({ length: WORKERS }, worker))
  const drain = n / seconds(t)
  await q.close()
  return { seed, drain }
}

async function perOperation (crawlq, redisUrl, queue, calls) {
  const q = await crawlq.Queue.connect(redisUrl, queue)
  await q.seed(Array.from({ length: calls }, (_, i) => url(i)))
  let t = process.hrtime.bigint()
  for (let i = 0; i < calls; i++) await q.stats()
  const stats = seconds(t) / calls * 1e6
  t = process.hrtime.bigint()
  for (let i = 0; i < calls; i++) {
    const [lease] = await q.lease({ waitMs: 0 })
    await q.ack(lease)
  }
  const pair = seconds(t) / calls * 1e6
  await q.close()
  return { stats, pair }
}

const median = xs => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]

async function main () {
  const n = Number(process.argv[2] ?? 100_000)
  const rounds = Number(process.argv[3] ?? 3)
  const redis = await startRedis()
  try {
    const results = { native: [], wasm: [] }
    for (let r = 0; r < rounds; r++) {
      for (const name of ['native', 'wasm']) {
        const t = await throughput(builds[name], redis.url, `t-${name}-${r}`, n)
        const p = await perOperation(builds[name], redis.url, `p-${name}-${r}`, 2000)
        results[name].push({ ...t, ...p })
        redis.cli('FLUSHALL')
      }
    }
    console.log(`N = ${n}, ${rounds} interleaved rounds, medians; per-operation: 2000 sequential calls`)
    console.log('| build | seed items/s | drain items/s (16 x lease 100 + ack) | stats() µs/call | lease 1 + ack 1 µs/pair |')
    console.log('|---|---|---|---|---|')
    for (const [name, runs] of Object.entries(results)) {
      const m = key => median(runs.map(x => x[key]))
      console.log(`| ${name} | ${m('seed').toFixed(0)} | ${m('drain').toFixed(0)} | ${m('stats').toFixed(0)} | ${m('pair').toFixed(0)} |`)
    }
    const ratio = key => (median(results.wasm.map(x => x[key])) / median(results.native.map(x => x[key]))).toFixed(2)
    console.log(`wasm/native: seed ${ratio('seed')}, drain ${ratio('drain')}, stats latency ${ratio('stats')}, lease+ack latency ${ratio('pair')}`)
  } finally {
    await redis.stop()
  }
}

main().catch(err => { console.error(err); process.exit(1) })
