'use strict'
// The README's Node.js worker runs for real, the typed example compiles under --strict, and
// the objects the API returns have exactly the fields index.d.ts declares.
const { test, before, after } = require('node:test')
const assert = require('node:assert/strict')
const { execFile } = require('node:child_process')
const fs = require('node:fs')
const http = require('node:http')
const path = require('node:path')
const { promisify } = require('node:util')
const { crawlq, modulePath, startRedis, uniqueName, T0 } = require('./harness.js')

const run = promisify(execFile)
const PACKAGE = path.resolve(__dirname, '..')
const REPO = path.resolve(PACKAGE, '..')

let redis
before(async () => { redis = await startRedis() })
after(async () => { await redis.stop() })

const SITE = {
  '/': '<a href="/a">a</a> <a href="/b#top">b</a>',
  '/a': '<a href="/b">b</a> <a href="c">c</a>',
  '/b': '<a href="/">home</a>',
  '/c': '<a href="/missing">gone</a>'
}

function readmeBlock () {
  const readme = fs.readFileSync(path.join(REPO, 'README.md'), 'utf8')
  const section = readme.split('\n## Node.js\n')[1].split('\n## ')[0]
  return /```js\n([\s\S]*?)```/.exec(section)[1]
}

test("the README's worker crawls a local site", async () => {
  await withSite(async (own, start) => {
    const entry = require('node:url').pathToFileURL(require.resolve(modulePath)).href
    const code = readmeBlock().replace("from 'crawlq'", `from ${JSON.stringify(entry)}`)
    const file = path.join(PACKAGE, 'test', `.readme-example-${process.pid}.mjs`)
    fs.writeFileSync(file, code)
    try {
      const env = { ...process.env, REDIS_URL: own.url, START_URL: start }
      const { stdout } = await run(process.execPath, [file], { env, timeout: 120_000 })
      // /, /a, /b, /c once each though linked several times; /missing is 404: retried, then dead
      assert.equal(stdout.trim(), '4 pages crawled, 1 dead')
    } finally {
      fs.rmSync(file, { force: true })
    }
  })
})

function readmeCrawleeBlock (language) {
  const guide = fs.readFileSync(path.join(REPO, 'docs', 'frameworks.md'), 'utf8')
  const section = guide.split('\n## Crawlee\n')[1].split('\n## ')[0]
  return new RegExp('```' + language + '\\n([\\s\\S]*?)```').exec(section)[1]
}

async function withSite (fn) {
  const server = http.createServer((req, res) => {
    const body = SITE[req.url]
    res.writeHead(body === undefined ? 404 : 200, { 'content-type': 'text/html' })
    res.end(body ?? 'not found')
  })
  await new Promise(resolve => server.listen(0, '127.0.0.1', resolve))
  const own = await startRedis()
  try {
    return await fn(own, `http://127.0.0.1:${server.address().port}/`)
  } finally {
    server.close()
    await own.stop()
  }
}

const crawleeAdapter = path.join(modulePath, 'crawlee.js')
test("the Crawlee crawler of docs/frameworks.md (an ES module) crawls a local site", { skip: !fs.existsSync(crawleeAdapter) && 'the module under test has no Crawlee adapter' }, async () => {
  await withSite(async (own, start) => {
    const entry = require('node:url').pathToFileURL(crawleeAdapter).href
    const code = readmeCrawleeBlock('js').replace("from 'crawlq/crawlee'", `from ${JSON.stringify(entry)}`)
    const file = path.join(PACKAGE, 'test', `.readme-crawlee-${process.pid}.mjs`)
    fs.writeFileSync(file, code)
    const storage = fs.mkdtempSync(path.join(require('node:os').tmpdir(), 'crawlq-readme-crawlee-'))
    try {
      const env = { ...process.env, REDIS_URL: own.url, START_URL: start, CRAWLEE_STORAGE_DIR: storage }
      await run(process.execPath, [file], { env, timeout: 120_000 })
      const q = await crawlq.Queue.connect(own.url, 'frontier')
      const stats = await q.stats()
      // /, /a, /b, /c once each; /missing (404) thrown as NonRetryableError: a dead letter
      assert.deepEqual([stats.done, stats.dead, stats.leased, stats.pending], [4, 1, 0, 0])
      assert.equal((await q.dead())[0].lastError, 'HTTP 404')
      await q.close()
    } finally {
      fs.rmSync(file, { force: true })
      fs.rmSync(storage, { recursive: true, force: true })
    }
  })
})

test('the typed example compiles with tsc --strict against the module under test', async () => {
  const tsc = path.join(PACKAGE, 'node_modules', '.bin', 'tsc')
  const base = path.join(PACKAGE, 'examples', 'tsconfig.json')
  const config = path.join(PACKAGE, 'examples', `.tsconfig-${process.pid}.json`)
  // 'crawlq' resolves to the types of the module under test
  fs.writeFileSync(config, JSON.stringify({
    extends: './tsconfig.json',
    compilerOptions: { paths: { crawlq: [path.join(modulePath, 'index.d.ts')] } },
    files: ['typed.ts']
  }))
  try {
    await run(tsc, ['-p', config], { cwd: PACKAGE })
  } finally {
    fs.rmSync(config, { force: true })
  }
  assert.ok(fs.existsSync(base))
})

function declaredFields (dts, name) {
  const match = new RegExp(`export interface ${name} (?:extends \\w+ )?\\{([\\s\\S]*?)\\n\\}`).exec(dts)
  assert.ok(match, `interface ${name} in index.d.ts`)
  return [...match[1].matchAll(/^\s+(\w+)\??:/gm)].map(m => m[1]).sort()
}

test('returned objects have exactly the fields the type declarations list', async () => {
  const dts = fs.readFileSync(path.join(modulePath, 'index.d.ts'), 'utf8')
  const q = await crawlq.Queue.connect(redis.url, uniqueName('types'), { fixedClock: T0 })
  const report = await q.seed(['http://a.com/1', 'http://a.com/2', 'bad url'])
  const keys = o => Object.keys(o).sort()
  assert.deepEqual(keys(report), declaredFields(dts, 'SeedReport'))
  assert.deepEqual(keys(report.invalid[0]), declaredFields(dts, 'InvalidInput'))
  assert.deepEqual(keys((await q.peek())[0]), declaredFields(dts, 'QueuedItem'))
  const [lease, other] = await q.lease({ max: 2, waitMs: 0 })
  assert.deepEqual(keys(lease), declaredFields(dts, 'Lease'))
  await q.nack(other, { retry: false })
  assert.deepEqual(keys((await q.dead())[0]), declaredFields(dts, 'DeadLetter'))
  // `shards` is there for a queue of several shards only
  assert.deepEqual(keys(await q.stats()), declaredFields(dts, 'Stats').filter(f => f !== 'shards'))
  const sharded = await crawlq.Queue.connect(redis.url, uniqueName('types'), { shards: 2 })
  const stats = await sharded.stats()
  assert.deepEqual(keys(stats), declaredFields(dts, 'Stats'))
  assert.deepEqual(keys(stats.shards[0]), declaredFields(dts, 'Stats').filter(f => f !== 'shards'))
  await sharded.close()
  assert.deepEqual(keys(await q.hostInfo('a.com')), declaredFields(dts, 'HostInfo'))
  assert.deepEqual(keys(await q.reclaim()), declaredFields(dts, 'ReclaimReport'))
})
