/** The baseline: a bare node:http server answering a small JSON body. Port from argv[2]. */
import { createServer } from 'node:http'

const body = JSON.stringify({ hello: 'world' })
createServer((_req, res) => {
  res.writeHead(200, {
    'content-type': 'application/json',
    'content-length': Buffer.byteLength(body),
  })
  res.end(body)
}).listen(Number(process.argv[2]), '127.0.0.1', () => process.stdout.write('ready\n'))
