// The verify-only ceiling: node:http, verify + parse, store nothing. No receiver
// that keeps what it acknowledges can be faster than this on the same machine.
import http from 'node:http';
import { answer, readVerified } from './verify.mjs';

const [port, , secret] = process.argv.slice(2);
http
  .createServer((req, res) =>
    readVerified(
      req,
      secret,
      () => answer(res, 200),
      (s) => answer(res, s),
    ),
  )
  .listen(Number(port), '127.0.0.1', () => process.send?.('ready'));
