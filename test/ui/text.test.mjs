// The page's pure helpers (cmd/kubectl-ayatori/ui/static/text.js) under node's own test runner:
// ANSI escapes stripped (also when a chunk cuts one), the log buffer bounded, and the log
// stream's framing (keep-alive comments skipped, data that is not JSON reported).
//   node --test test/ui/text.test.mjs
import assert from 'node:assert/strict';
import {test} from 'node:test';

import {BoundedLog, parseEvents, stripAnsi} from '../../cmd/kubectl-ayatori/ui/static/text.js';

test('stripAnsi removes colours, cursor moves and titles, keeping their text', () => {
  assert.equal(stripAnsi('\u001b[31mred\u001b[0m plain'), 'red plain');
  assert.equal(stripAnsi('a\u001b[2K\u001b[1Gb'), 'ab');
  assert.equal(stripAnsi('\u001b]0;title\u0007text'), 'text');
  assert.equal(stripAnsi('\u001b]8;;http://evil.test\u001b\\link\u001b]8;;\u001b\\'), 'link');
  assert.equal(stripAnsi('<script>alert(1)</script>'), '<script>alert(1)</script>');
});

test('an escape cut between two chunks is stripped whole', () => {
  const log = new BoundedLog(1000);
  log.append('one \u001b[3');
  log.append('1mtwo\u001b[0m\n');
  assert.equal(log.text, 'one two\n');
});

test('the log keeps only its last characters and counts the dropped ones', () => {
  const log = new BoundedLog(10);
  log.append('0123456789');
  log.append('abcde');
  assert.equal(log.text, '56789abcde');
  assert.equal(log.dropped, 5);
});

test('events are framed by blank lines; keep-alives are skipped; the rest waits', () => {
  const body = 'event: log\ndata: "a\\nb"\n\n: keep-alive\n\nevent: end\ndata: {}\n\nevent: log\nda';
  const {events, rest} = parseEvents(body);
  assert.deepEqual(events, [{type: 'log', data: 'a\nb'}, {type: 'end', data: {}}]);
  assert.equal(rest, 'event: log\nda');
  assert.equal(parseEvents('event: log\ndata: not json\n\n').events[0].type, 'error');
});
