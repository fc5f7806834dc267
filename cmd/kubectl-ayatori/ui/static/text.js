// Pure helpers of the page (no DOM): ANSI escapes, the bounded log buffer and the framing of the
// log stream (cmd/kubectl-ayatori/ui/server.cc, ServeLog). Tested by test/ui/text.test.mjs.

// CSI sequences (colours, cursor moves), OSC sequences (titles, hyperlinks) and other two-byte
// escapes: a log is shown as the text the task printed, never as terminal commands.
const ANSI = /\u001b\[[0-?]*[ -\/]*[@-~]|\u001b\][^\u0007\u001b]*(?:\u0007|\u001b\\)|\u001b[@-Z\\-_]/g;

export function stripAnsi(text) {
  return text.replace(ANSI, '');
}

// The page keeps at most `limit` characters of a log: a task that prints for hours must not eat
// the browser's memory. Older text is dropped from the front, and the page says so.
export class BoundedLog {
  constructor(limit) {
    this.limit = limit;
    this.text = '';
    this.dropped = 0;
    this.pending = '';  // an escape sequence cut by a chunk boundary
  }
  append(chunk) {
    let text = this.pending + chunk;
    this.pending = '';
    const cut = text.lastIndexOf('\u001b');
    if (cut >= 0 && cut > text.length - 64 && stripAnsi(text.slice(cut)) === text.slice(cut)) {
      // An ESC near the end that does not complete a sequence yet: keep it for the next chunk.
      this.pending = text.slice(cut);
      text = text.slice(0, cut);
    }
    this.text += stripAnsi(text);
    if (this.text.length > this.limit) {
      const over = this.text.length - this.limit;
      this.dropped += over;
      this.text = this.text.slice(over);
    }
  }
}

// Splits a text/event-stream body into events: {type, data}; `rest` is an incomplete event.
export function parseEvents(buffer) {
  const events = [];
  let start = 0;
  for (;;) {
    const end = buffer.indexOf('\n\n', start);
    if (end < 0) break;
    const block = buffer.slice(start, end);
    start = end + 2;
    let type = 'message';
    let data = null;
    for (const line of block.split('\n')) {
      if (line.startsWith('event: ')) type = line.slice(7);
      else if (line.startsWith('data: ')) data = (data || '') + line.slice(6);
    }
    if (data === null) continue;  // a comment: the server's keep-alive
    try {
      events.push({type, data: JSON.parse(data)});
    } catch {
      events.push({type: 'error', data: {message: 'the log stream could not be read'}});
    }
  }
  return {events, rest: buffer.slice(start)};
}
