'use strict'
// What only the WebAssembly build has to show: it and the native addon share a queue with
// identical stored bytes; the ioredis transport and the ES-module entry work; the transports
// run Redis functions (scripts where they are refused); and its one documented limitation.
const { test, before, after } = require('node:test')
const assert = require('node:assert/strict')
const { execFile } = require('node:child_process')
const path = require('node:path')
const { promisify } = require('node:util')
const { startRedis, uniqueName, T0 } = require('../../bindings-node/test/harness.js')

const wasm = require(path.resolve(__dirname, '..', 'pkg'))
const native = require(path.resolve(__dirname, '..', '..', 'bindings-node'))
const run = promisify(execFile)

let redis
before(async () => { redis = await startRedis() })
after(async () => { await redis.stop() })

const BATCH = [
  'https://Example.COM:443/a/../b?x=1#frag',
  { url: 'http://bücher.example/ü', priority: 7, payload: { z: 1.0, a: ['é', null, true], n: -2.5 } },
  { host: 'Example.ORG.', payload: 'plain' },
  { url: 'http://delayed.example/', delayMs: 60_000 }
]

function storedRecords (name) {
  const base = `crawlq:{${name}}`
  const lanes = redis.cli('--scan', '--pattern', `${base}:l:*`).split('\n').filter(Boolean).sort()
  const records = lanes.flatMap(lane => redis.cli('LRANGE', lane, '0', '-1').split('\n'))
  return records.concat(redis.cli('ZRANGE', `${base}:delayed`, '0', '-1').split('\n'))
}

test('the wasm build and the native addon store byte-identical records', async () => {
  const [a, b] = [uniqueName('bytes-wasm'), uniqueName('bytes-native')]
  const qa = await wasm.Queue.connect(redis.url, a, { fixedClock: T0 })
  const qb = await native.Queue.connect(redis.url, b, { fixedClock: T0 })
  const [ra, rb] = [await qa.seed(BATCH), await qb.seed(BATCH)]
  assert.deepEqual(ra, rb)
  assert.equal(ra.ids.filter(id => typeof id === 'string').length, ra.added, 'an id for every added item')
  const records = storedRecords(a)
  assert.equal(records.length, 4)
  assert.deepEqual(records, storedRecords(b))
  assert.ok(records.some(r => r.includes('"payload":{"a":["é",null,true],"n":-2.5,"z":1}')), records.join('\n'))
  await qa.close()
})

test('seed through wasm, lease and ack through native, and the reverse, on one queue', async () => {
  const name = uniqueName('mixed')
  const viaWasm = await wasm.Queue.connect(redis.url, name)
  const viaNative = await native.Queue.connect(redis.url, name)
  await viaWasm.seed(['http://w.example/1', 'http://w.example/2'])
  await viaNative.seed(['http://n.example/1', 'http://w.example/1'])
  const leased = await viaNative.lease({ max: 10, waitMs: 0 })
  assert.deepEqual(leased.map(l => l.url).sort(), ['http://n.example/1', 'http://w.example/1', 'http://w.example/2'])
  assert.deepEqual(await viaWasm.ack(leased.slice(0, 2)), [true, true], 'wasm acks native leases')
  assert.equal(await viaNative.nack(leased[2], { retry: false, reason: 'from native' }), 'dead')
  const dead = await viaWasm.dead()
  assert.deepEqual(dead.map(d => d.lastError), ['from native'])
  const { now: _w, ...fromWasm } = await viaWasm.stats()
  const { now: _n, ...fromNative } = await viaNative.stats()
  assert.deepEqual(fromWasm, fromNative)
  await viaWasm.close()
})

test('a number JSON cannot hold is refused in the same words as by the native addon', async () => {
  const name = uniqueName('not-json')
  const viaWasm = await wasm.Queue.connect(redis.url, name)
  const viaNative = await native.Queue.connect(redis.url, name)
  for (const [payload, spelt] of [[NaN, 'NaN'], [Infinity, 'Infinity'], [{ deep: [-Infinity] }, '-Infinity']]) {
    const refusals = []
    for (const q of [viaWasm, viaNative]) {
      await assert.rejects(q.seed(['http://a.example/'], { payload }), err => {
        assert.equal(err.code, 'ERR_CRAWLQ_INVALID_ARGUMENT')
        refusals.push(err.message)
        return true
      })
    }
    assert.equal(refusals[0], refusals[1])
    assert.ok(refusals[0].includes(` is ${spelt}, which is not JSON`), refusals[0])
  }
  assert.equal((await viaNative.stats()).seen, 0, 'nothing seeded')
  await viaWasm.close()
  await viaNative.close()
})

test('a seed through the wasm build reports its progress, as the addon\'s does', async () => {
  const q = await wasm.Queue.connect(redis.url, uniqueName('progress'), { seedBatch: 300 })
  const reports = []
  const urls = Array.from({ length: 700 }, (_, i) => `http://w${i % 7}.example/${i}`)
  await q.seed(urls, { onProgress: async p => { reports.push([p.done, p.total, p.added]) } })
  assert.deepEqual(reports, [[300, 700, 300], [600, 700, 600], [700, 700, 700]])
  const stop = new Error('stop')
  await assert.rejects(q.seed(urls.map(u => u + '?b'), { onProgress: () => { throw stop } }), e => e === stop)
  await q.close()
})

test('the ioredis transport runs a queue too', async () => {
  const transport = await wasm.ioredisTransport(redis.url, { commandTimeoutMs: 2000 })
  const q = new wasm.Queue(transport, uniqueName('ioredis'), { hostDelayMs: 0 })
  assert.equal(q.transport, transport)
  await q.seed(['http://io.example/1', 'http://io.example/2'])
  const waiting = q.lease({ max: 5, waitMs: 10_000 })
  const leases = await waiting
  assert.equal(leases.length, 2)
  assert.deepEqual(await q.ack(leases), [true, true])
  const started = Date.now()
  const later = q.lease({ waitMs: 10_000 })
  setTimeout(() => { q.seed(['http://io.example/3']) }, 200)
  assert.equal((await later).length, 1, 'a blocked wait is woken by a seed')
  assert.ok(Date.now() - started < 5000)
  redis.cli('FUNCTION', 'FLUSH')
  assert.equal((await q.stats()).leased, 1, 'a missing function library is loaded again')
  await q.close()
})

test('the transports run Redis functions, so the seen cache keeps links; scripts where functions are refused', async () => {
  const name = uniqueName('functions')
  const links = Array.from({ length: 10 }, (_, i) => `http://fn.example/${i}`)
  for (const transport of [wasm.nodeRedisTransport, wasm.ioredisTransport]) {
    const q = new wasm.Queue(await transport(redis.url), name, { seenCache: 1000 })
    await q.seed(links)
    const again = await q.seed(links)
    assert.deepEqual([again.added, again.duplicates], [0, 10])
    assert.deepEqual(await q.seenCacheStats(), { entries: 10, hits: 10, misses: 10, resent: 0, resets: 0 })
    await q.close()
  }
  // a user refused FCALL: the same operations as scripts (EVALSHA), whose seen epoch cannot
  // tell a restart that lost writes, so the cache keeps nothing and every link goes to Redis
  redis.cli('ACL', 'SETUSER', 'scriptsonly', 'on', '>pw', '~*', '&*', '+@all', '-fcall', '-function')
  const url = redis.url.replace('redis://', 'redis://scriptsonly:pw@')
  for (const transport of [wasm.nodeRedisTransport, wasm.ioredisTransport]) {
    const q = new wasm.Queue(await transport(url), name, { seenCache: 1000 })
    const again = await q.seed(links)
    assert.deepEqual([again.added, again.duplicates], [0, 10])
    const more = await q.seed(links)
    assert.deepEqual([more.added, more.duplicates], [0, 10])
    assert.deepEqual(await q.seenCacheStats(), { entries: 0, hits: 0, misses: 20, resent: 0, resets: 0 })
    await q.close()
  }
  redis.cli('ACL', 'DELUSER', 'scriptsonly')
})

test('the transports\' errors name the URL without its password', async () => {
  for (const transport of [wasm.nodeRedisTransport, wasm.ioredisTransport]) {
    await assert.rejects(transport('redis://user:s3cret@127.0.0.1:1/0', { connectTimeoutMs: 300 }), err => {
      assert.equal(err.kind, 'unavailable', err.message)
      assert.match(err.message, /^connecting to redis:\/\/\*\*\*@127\.0\.0\.1:1\/0: /)
      assert.doesNotMatch(err.message, /s3cret/)
      return true
    })
  }
  await assert.rejects(wasm.nodeRedisTransport('http://:s3cret@127.0.0.1:1/'), err => {
    assert.equal(err.kind, 'config', err.message)
    assert.match(err.message, /^redis URL http:\/\/\*\*\*@127\.0\.0\.1:1\/: /)
    assert.doesNotMatch(err.message, /s3cret/)
    return true
  })
  // Queue.connect words them as the native addon does, the kind's prefix first
  for (const build of [wasm, native]) {
    await assert.rejects(build.Queue.connect('redis://user:s3cret@127.0.0.1:1/0', 'q', { connectTimeoutMs: 300 }), err => {
      assert.equal(err.code, 'ERR_CRAWLQ_UNAVAILABLE', err.message)
      assert.match(err.message, /^redis unavailable: connecting to redis:\/\/\*\*\*@127\.0\.0\.1:1\/0: /)
      return true
    })
    await assert.rejects(build.Queue.connect('http://:s3cret@127.0.0.1:1/', 'q'), err => {
      assert.equal(err.code, 'ERR_CRAWLQ_CONFIG', err.message)
      assert.match(err.message, /^invalid configuration: redis URL http:\/\/\*\*\*@127\.0\.0\.1:1\/: unsupported scheme/)
      return true
    })
  }
})

test('an HTTP port is a config error through ioredis, as in the native addon; node-redis only sees the socket close', async () => {
  const server = require('node:http').createServer((req, res) => res.end('not redis'))
  await new Promise(resolve => server.listen(0, '127.0.0.1', resolve))
  const url = `redis://127.0.0.1:${server.address().port}/0`
  try {
    await assert.rejects(wasm.ioredisTransport(url, { connectTimeoutMs: 1000 }), err => {
      assert.equal(err.kind, 'config', err.message)
      assert.match(err.message, /did not answer in Redis's protocol \(Protocol error, .*\): is that the address of a Redis server\?$/)
      return true
    })
    await assert.rejects(native.Queue.connect(url, 'q', { connectTimeoutMs: 1000 }), err => {
      assert.equal(err.code, 'ERR_CRAWLQ_CONFIG', err.message)
      assert.match(err.message, /did not answer in Redis's protocol/)
      return true
    })
    await assert.rejects(wasm.nodeRedisTransport(url, { connectTimeoutMs: 1000 }), err => err.kind === 'unavailable')
  } finally {
    server.closeAllConnections()
    await new Promise(resolve => server.close(resolve))
  }
})

test('a refused password or database and an unreadable URL are config errors, as in the native addon', async () => {
  const own = await startRedis('--requirepass', 's3cret')
  const port = new URL(own.url).port
  const refused = {
    [`redis://:wrong@127.0.0.1:${port}/0`]: /authentication failed \(WRONGPASS/,
    [`redis://127.0.0.1:${port}/0`]: /authentication failed \(NOAUTH/,
    [`redis://:s3cret@127.0.0.1:${port}/99`]: /no database of the URL's number \(ERR DB index is out of range\)/,
    [`127.0.0.1:${port}`]: new RegExp(`no scheme: write redis://127\\.0\\.0\\.1:${port}$`),
    [`http://127.0.0.1:${port}`]: /unsupported scheme "http"/
  }
  try {
    for (const [url, says] of Object.entries(refused)) {
      for (const transport of [wasm.nodeRedisTransport, wasm.ioredisTransport]) {
        await assert.rejects(transport(url, { connectTimeoutMs: 1000 }), err => {
          assert.equal(err.kind, 'config', `${transport.name} ${url}: ${err.message}`)
          assert.match(err.message, says)
          return true
        })
      }
      await assert.rejects(wasm.Queue.connect(url, 'q', { connectTimeoutMs: 1000 }), err => err.code === 'ERR_CRAWLQ_CONFIG' && says.test(err.message))
      await assert.rejects(native.Queue.connect(url, 'q', { connectTimeoutMs: 1000 }), err => err.code === 'ERR_CRAWLQ_CONFIG', url)
    }
    // the database of the URL is the one used (ioredis went on in database 0 when refused)
    const name = uniqueName('db')
    const q = new wasm.Queue(await wasm.ioredisTransport(`redis://:s3cret@127.0.0.1:${port}/3`, {}), name, {})
    await q.seed(['http://db.example/'])
    assert.equal(own.cli('-a', 's3cret', '--no-auth-warning', '-n', '3', 'EXISTS', `crawlq:{${name}}:meta`), '1')
    await q.close()
  } finally {
    await own.stop()
  }
})

test('both transports take a unix socket URL, as the native bindings do', async () => {
  const dir = require('node:fs').mkdtempSync(path.join(require('node:os').tmpdir(), 'crawlq-sock-'))
  const socket = path.join(dir, 'redis.sock')
  const own = await startRedis('--unixsocket', socket, '--unixsocketperm', '700')
  try {
    for (const transport of [wasm.nodeRedisTransport, wasm.ioredisTransport]) {
      const name = uniqueName('unix')
      const q = new wasm.Queue(await transport(`unix://${socket}?db=2`, {}), name, {})
      await q.seed(['http://unix.example/1'])
      assert.equal((await q.lease({ waitMs: 0 })).length, 1, transport.name)
      // the queue lives in database 2 of that server
      assert.equal(own.cli('-n', '2', 'EXISTS', `crawlq:{${name}}:meta`), '1', transport.name)
      await q.close()
    }
    const q = await wasm.Queue.connect(`unix://${socket}`, uniqueName('unix'))
    assert.equal((await q.seed(['http://unix.example/2'])).added, 1)
    await q.close()
    await assert.rejects(wasm.nodeRedisTransport(`unix://${socket}?db=x`, {}), err => err.kind === 'config' && /db must be/.test(err.message))
    await assert.rejects(wasm.Queue.connect(`unix://${socket}?db=x`, 'q'), err => err.code === 'ERR_CRAWLQ_CONFIG')
  } finally {
    await own.stop()
    require('node:fs').rmSync(dir, { recursive: true, force: true })
  }
})

test('a server that evicts any key is refused unless allowEviction; evictionRisk shows why', async () => {
  const own = await startRedis('--maxmemory', '1gb', '--maxmemory-policy', 'allkeys-lru')
  try {
    await assert.rejects(wasm.Queue.connect(own.url, 'evicts'), err => {
      assert.equal(err.code, 'ERR_CRAWLQ_CONFIG')
      assert.match(err.message, /allkeys-lru.*allowEviction/)
      return true
    })
    assert.equal(own.cli('DBSIZE'), '0', 'nothing written')
    const q = await wasm.Queue.connect(own.url, 'evicts', { allowEviction: true })
    assert.equal((await q.seed(['http://e.example/1'])).added, 1)
    const keys = own.cli('DBSIZE')
    assert.match(await q.evictionRisk(), /allkeys-lru, maxmemory 1073741824 bytes/)
    assert.equal(own.cli('DBSIZE'), keys, 'the check only reads')
    own.cli('CONFIG', 'SET', 'maxmemory-policy', 'noeviction')
    assert.equal(await q.evictionRisk(), null)
    await q.close()
  } finally {
    await own.stop()
  }
})

test('the option table and the adapters\' rule are the native addon\'s', () => {
  assert.deepEqual(wasm.defaultOptions(), native.defaultOptions())
  for (const options of [undefined, { leaseTtlMs: 3000 }, { extendEveryMs: 0 }]) {
    assert.deepEqual(wasm.frameworkOptions(options), native.frameworkOptions(options))
  }
  assert.throws(() => wasm.frameworkOptions({ leaseTtl: 3 }), err => err.code === 'ERR_CRAWLQ_CONFIG')
})

test('the ES-module entry loads from a plain import', async () => {
  const entry = require('node:url').pathToFileURL(path.resolve(__dirname, '..', 'pkg', 'index.mjs')).href
  const code = `import { Queue } from ${JSON.stringify(entry)}
const q = await Queue.connect(${JSON.stringify(redis.url)}, 'esm')
const report = await q.seed(['http://esm.example/'])
console.log(report.added, typeof Queue.prototype.work)
await q.close()`
  const { stdout } = await run(process.execPath, ['--input-type=module', '-e', code], { timeout: 30_000 })
  assert.equal(stdout.trim(), '1 function')
})

test('limitation: hostKey "domain" needs the Public Suffix List, which the wasm build leaves out', async () => {
  await assert.rejects(wasm.Queue.connect(redis.url, 'psl', { hostKey: 'domain' }), err => {
    assert.equal(err.code, 'ERR_CRAWLQ_CONFIG')
    assert.match(err.message, /Public Suffix List/)
    return true
  })
  const q = await native.Queue.connect(redis.url, uniqueName('psl'), { hostKey: 'domain' })
  await q.seed(['http://www.shop.co.uk/'])
  assert.equal((await q.lease({ waitMs: 0 }))[0].host, 'shop.co.uk', 'the native addon has it')
})

test('a transport without the two methods is refused', () => {
  assert.throws(() => new wasm.Queue({ evalScript () {} }, 'q', {}), err => err instanceof TypeError && /blockingWait/.test(err.message))
})

// the operations Redis ran: functions (FCALL), as the built-in transports send them
function scriptCalls () {
  const line = redis.cli('INFO', 'commandstats').split('\n').find(l => l.startsWith('cmdstat_fcall:'))
  return line ? Number(/calls=(\d+)/.exec(line)[1]) : 0
}

test('with answerLingerMs, pages answered one after another go in one call (a setTimeout wait)', async () => {
  const q = await wasm.Queue.connect(redis.url, uniqueName('linger'), { answerLingerMs: 400, shards: 1 })
  await q.seed(Array.from({ length: 6 }, (_, i) => `http://p${i}.com/`))
  const pages = await q.lease({ max: 3, waitMs: 0 })
  const before = scriptCalls()
  const started = Date.now()
  const answers = await Promise.all(pages.map(async (page, i) => {
    await new Promise((resolve) => setTimeout(resolve, 50 * i))
    const answer = await q.ackWithLinksAndLease(page, [`http://n${i}.com/`], { waitMs: 0 })
    return { ...answer, took: Date.now() - started }
  }))
  assert.equal(scriptCalls() - before, 1, 'the first page waited for the two answered after it')
  assert.deepEqual(answers.map((a) => [a.acked, a.links.added, a.leases.length]), Array(3).fill([true, 1, 1]))
  assert.ok(answers.every((a) => a.took >= 390), `answered after ${answers.map((a) => a.took)} ms`)
  await q.close()
})

test('a seed lets the client send each chunk (yieldNow) before it prepares the next', async () => {
  const inner = await wasm.nodeRedisTransport(redis.url)
  const calls = { handed: 0, yields: [] }
  const watched = {
    evalScript (...args) { calls.handed++; return inner.evalScript(...args) },
    blockingWait: (key, seconds) => inner.blockingWait(key, seconds),
    async yieldNow () {
      await inner.yieldNow()
      // node-redis writes on a later turn of the event loop; the server's count says whether
      // the chunk left before this (blocking) look
      calls.yields.push([calls.handed, scriptCalls()])
    },
    close: () => inner.close()
  }
  const q = new wasm.Queue(watched, uniqueName('chunks'), { seedBatch: 50 })
  await q.stats()
  const [handedBefore, ranBefore] = [calls.handed, scriptCalls()]
  const urls = Array.from({ length: 150 }, (_, i) => `http://h${i % 7}.example/${i}`)
  assert.equal((await q.seed(urls)).added, 150)
  assert.deepEqual(calls.yields.map(([h, r]) => [h - handedBefore, r - ranBefore]), [[1, 1], [2, 2], [3, 3]])

  // a transport without yieldNow seeds the same, only without the overlap
  const { yieldNow: _, ...plain } = watched
  const q2 = new wasm.Queue(plain, uniqueName('chunks'), { seedBatch: 50 })
  assert.equal((await q2.seed(urls)).added, 150)
  assert.equal(calls.yields.length, 3)
  await q.close()
})

test('named crawls through wasm and native on one queue: the crawl is on every lease, de-duplication per crawl', async () => {
  const name = uniqueName('crawls')
  const qa = await wasm.Queue.connect(redis.url, name, { hostDelayMs: 0, fixedClock: T0 })
  const qb = await native.Queue.connect(redis.url, name, { hostDelayMs: 0, fixedClock: T0 })
  assert.equal((await qa.seed(['http://a.com/x'], { crawl: 'red' })).added, 1)
  assert.equal((await qb.seed(['http://a.com/x'], { crawl: 'red' })).duplicates, 1)
  assert.equal((await qb.seed(['http://a.com/x'], { crawl: 'blue' })).added, 1)
  const fromWasm = await qa.lease({ max: 1, waitMs: 0 })
  const fromNative = await qb.lease({ max: 1, waitMs: 0 })
  assert.deepEqual([...fromWasm, ...fromNative].map(l => l.crawl).sort(), ['blue', 'red'])
  assert.deepEqual(await qa.ack(fromNative), [true])
  assert.deepEqual(await qb.ack(fromWasm), [true])
  // each crawl's rates over the last minute (T0 starts a minute), the same read by either
  for (const crawl of ['red', 'blue']) {
    const [a, b] = [await qa.crawlStats(crawl), await qb.crawlStats(crawl)]
    assert.deepEqual([a.donePerSecond, a.seededPerSecond], [0.016667, 0.016667])
    assert.deepEqual(a, b)
  }
  await assert.rejects(qa.seed(['http://a.com/'], { crawl: '' }), e => e.code === 'ERR_CRAWLQ_INVALID_ARGUMENT')
  qa.close()
  qb.close()
})

test('a crawl capped and paused through wasm holds for the native addon\'s leases too', async () => {
  const name = uniqueName('crawl-limits')
  const qa = await wasm.Queue.connect(redis.url, name, { hostDelayMs: 0 })
  const qb = await native.Queue.connect(redis.url, name, { hostDelayMs: 0 })
  const urls = Array.from({ length: 16 }, (_, i) => `http://h${i % 8}.com/${i}`)
  await qa.seed(urls, { crawl: 'capped' })
  await qa.seed(urls.map(u => `${u}?other`), { crawl: 'other' })
  assert.equal((await qa.setCrawlCap('capped', 2)).cap, 2)
  assert.equal((await qa.setCrawlWeight('other', 2)).weight, 2)
  const leases = []
  for (let w = 0; w < 16; w++) leases.push(...await (w % 2 ? qa : qb).lease({ max: 1, waitMs: 0 }))
  const count = crawl => leases.filter(l => l.crawl === crawl).length
  assert.deepEqual([count('capped'), count('other')], [2, 14])
  assert.equal((await qb.crawlStats('capped')).leased, 2)
  await qa.pauseCrawl('other')
  await qb.setCrawlCap('capped', null)
  const more = await qb.lease({ max: 50, waitMs: 0 })
  assert.deepEqual([...new Set(more.map(l => l.crawl))], ['capped'])
  assert.equal(more.length, 14)
  assert.deepEqual(await qa.crawls(), ['capped', 'other'])
  assert.equal((await qa.crawlStats('other')).paused, true)
  await qb.resumeCrawl('other')
  assert.equal((await qa.lease({ max: 50, waitMs: 0 })).length, 2)
  // a host budget set through wasm refuses the native addon's seed past it
  assert.equal((await qa.setCrawlHostBudget('trial', 1)).hostBudget, 1)
  const trial = await qb.seed(['http://h0.com/t1', 'http://h0.com/t2'], { crawl: 'trial' })
  assert.deepEqual([trial.added, trial.invalid.map(i => i.code)], [1, ['budget_exhausted']])
  qa.close()
  qb.close()
})

test('a crawl deleted through wasm while the native addon holds its leases: those answer lost, the other crawl is whole', async () => {
  const name = uniqueName('crawl-delete')
  const qa = await wasm.Queue.connect(redis.url, name, { hostDelayMs: 0 })
  const qb = await native.Queue.connect(redis.url, name, { hostDelayMs: 0 })
  const urls = p => Array.from({ length: 12 }, (_, i) => `http://h${i % 4}.com/${p}${i}`)
  await qb.seed(urls('d'), { crawl: 'doomed' })
  await qb.seed(urls('k'), { crawl: 'kept' })
  const out = await qb.lease({ max: 6, waitMs: 0 })
  const doomedOut = out.filter(l => l.crawl === 'doomed')
  const gone = await qa.deleteCrawl('doomed')
  assert.deepEqual(gone, { crawl: 'doomed', ready: 12 - doomedOut.length, delayed: 0, leased: doomedOut.length, dead: 0, removed: 12 })
  if (doomedOut.length > 0) assert.deepEqual(await qb.ack(doomedOut), doomedOut.map(() => false))
  await qb.ack(out.filter(l => l.crawl === 'kept'))
  const rest = await qa.lease({ max: 50, waitMs: 0 })
  assert.deepEqual([...new Set(rest.map(l => l.crawl))], ['kept'])
  assert.equal(rest.length + out.length - doomedOut.length, 12)
  assert.deepEqual(await qb.crawls(), ['kept'])
  qa.close()
  qb.close()
})

test('a wasm worker leasing from its chosen crawl takes only that crawl\'s items of a queue the native addon seeded', async () => {
  const name = uniqueName('crawl-chosen')
  const qb = await native.Queue.connect(redis.url, name, { hostDelayMs: 0 })
  await qb.seed(Array.from({ length: 40 }, (_, i) => `http://h${i % 20}.com/big${i}`), { crawl: 'big' })
  await qb.seed(['http://h19.com/small'], { crawl: 'small' })
  const worker = await wasm.Queue.connect(redis.url, name, { hostDelayMs: 0, leaseCrawls: ['small'] })
  const leased = await worker.lease({ max: 10, waitMs: 500 })
  assert.deepEqual(leased.map(l => l.crawl), ['small'])
  assert.equal((await qb.crawlStats('big')).leased, 0)
  await assert.rejects(wasm.Queue.connect(redis.url, name, { leaseCrawls: ['sm all'] }),
    e => e.code === 'ERR_CRAWLQ_CONFIG' && e.message.includes('got "sm all"'))
  worker.close()
  qb.close()
})

test('close() ends the waits under way, as the addon\'s does, then closes the client', async () => {
  const q = await wasm.Queue.connect(redis.url, uniqueName('wasm-close'))
  const worked = []
  const waiting = Promise.all([
    q.lease({ max: 1, waitMs: 30000 }),
    (async () => { for await (const lease of q.work({ max: 2, waitMs: 30000 })) worked.push(lease.url) })()
  ])
  await new Promise(resolve => setTimeout(resolve, 300))
  const started = Date.now()
  await q.close()
  const [leased] = await waiting
  assert.ok(Date.now() - started < 10000, 'ended by close(), not the 30 s waits')
  assert.deepEqual([leased, worked], [[], []])
  await assert.rejects(q.stats(), 'the client is closed')
})
