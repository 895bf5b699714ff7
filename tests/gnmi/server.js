// A gNMI target for fabricmon's tests, on a gRPC that is not fabricmon's:
// Node.js with @grpc/grpc-js, the messages loaded at run time from the same
// proto/gnmi/*.proto by @grpc/proto-loader. It serves Subscribe (STREAM,
// SAMPLE): every sample interval the client asked for it sends the leaves
// the test has set, one Notification per keyed element (the prefix up to it,
// the rest in the Update), then sync_response after the first round.
//
//   node server.js --proto DIR [--port N] [--cert F --key F [--ca F]]
//                  [--user U --password P] [--ports K] [--synthetic PORTS]
//
// Prints "listening PORT" once bound (port 0: the kernel's choice; with
// --ports K, K ports on one server: "listening P1 ... PK"), then
// reads commands on stdin, one per line, and answers each with "ok N":
//   set PATH uint|int|string|double|json VALUE   a leaf and its value
//   grow PATH PER_SECOND           a uint counter leaf that rises at that
//                                  rate from 0 (now), as a switch counts
//   del PATH                       the leaf is gone (and sends a delete)
//   mode normal|silent|drop        silent: new streams get nothing;
//                                  drop: each open stream, at its next
//                                  round, sends half its updates and fails
//   stats                          prints "subscribes N" (streams so far)
// Paths: /a/b[k=v]/c (no '/', ']' or '=' inside keys).
//
// --synthetic PORTS (bench/gnmi_scale.py): no leaves from stdin; every
// second every stream gets PORTS ports' worth of the documented leaves
// (28 per port), counters growing each round, encoded once per round and
// written as bytes to every stream, so the target's own cost stays small.
'use strict';
const grpc = require('@grpc/grpc-js');
const protoLoader = require('@grpc/proto-loader');
const fs = require('fs');
const path = require('path');
const readline = require('readline');

const args = {};
for (let i = 2; i < process.argv.length; i += 2) {
  args[process.argv[i].replace(/^--/, '')] = process.argv[i + 1];
}
const def = protoLoader.loadSync(path.join(args.proto, 'gnmi.proto'), {
  includeDirs: [args.proto], keepCase: true, longs: String, enums: String,
  defaults: true, oneofs: true,
});
const gnmi = grpc.loadPackageDefinition(def).gnmi;

function parsePath(text) {
  const elem = [];
  for (const part of text.split('/').filter((p) => p.length)) {
    const m = part.match(/^([^\[]+)((\[[^\]]*\])*)$/);
    if (!m) throw new Error('bad path element ' + part);
    const key = {};
    for (const k of (m[2].match(/\[[^\]]*\]/g) || [])) {
      const [name, value] = k.slice(1, -1).split('=');
      key[name] = value;
    }
    elem.push({name: m[1], key});
  }
  return elem;
}

function typed(kind, value) {
  switch (kind) {
    case 'uint': return {uint_val: value};
    case 'int': return {int_val: value};
    case 'double': return {double_val: Number(value)};
    case 'string': return {string_val: value};
    case 'json': return {json_ietf_val: Buffer.from(value)};
    default: throw new Error('bad kind ' + kind);
  }
}

const leaves = new Map();  // path text -> {elem, val}
const deleted = [];        // paths deleted since the last round
let mode = 'normal';
let subscribes = 0;
const streams = new Set();

// Notifications of one round: grouped by the path up to its last keyed
// element (the prefix), the rest relative to it.
function round() {
  const groups = new Map();
  for (const {elem, val, rate, since} of leaves.values()) {
    const v = rate === undefined ? val :
        {uint_val: String(Math.floor(rate * (Date.now() - since) / 1000))};
    let cut = 0;
    elem.forEach((e, i) => { if (Object.keys(e.key).length) cut = i + 1; });
    const prefix = elem.slice(0, cut);
    const id = JSON.stringify(prefix);
    if (!groups.has(id)) groups.set(id, {prefix, updates: []});
    groups.get(id).updates.push({path: {elem: elem.slice(cut)}, val: v});
  }
  const ts = String(BigInt(Date.now()) * 1000000n);
  const out = [];
  for (const g of groups.values()) {
    out.push({timestamp: ts, prefix: {elem: g.prefix}, update: g.updates});
  }
  if (deleted.length) {
    out.push({timestamp: ts, delete: deleted.map((e) => ({elem: e}))});
    deleted.length = 0;
  }
  return out;
}

function subscribe(call) {
  subscribes++;
  const md = call.metadata.getMap();
  if (args.user &&
      (md.username !== args.user || md.password !== args.password)) {
    call.emit('error', {code: grpc.status.UNAUTHENTICATED,
                        details: 'bad username or password'});
    return;
  }
  let timer = null;
  let synced = false;
  const state = {dropping: false};
  streams.add(state);
  const stop = () => { if (timer) clearInterval(timer); streams.delete(state); };
  call.on('data', (req) => {
    if (!req.subscribe || timer) return;
    if (mode === 'silent') return;
    if (synthetic > 0) {
      syntheticStreams.add(call);
      const drop = () => syntheticStreams.delete(call);
      call.on('cancelled', drop);
      call.on('error', drop);
      call.on('close', drop);
      return;
    }
    const sub = req.subscribe.subscription || [];
    const ns = sub.length ? Number(sub[0].sample_interval) : 1e9;
    const ms = Math.max(50, Math.round(ns / 1e6));
    const send = () => {
      const notes = round();
      if (state.dropping) {
        // Half of the first notification's updates, then the stream fails.
        const n = notes[0] || {update: []};
        n.update = n.update.slice(0, Math.ceil(n.update.length / 2));
        call.write({update: n});
        stop();
        call.emit('error', {code: grpc.status.UNAVAILABLE,
                            details: 'dropped mid-update'});
        return;
      }
      for (const n of notes) call.write({update: n});
      if (!synced) { call.write({sync_response: true}); synced = true; }
    };
    send();
    timer = setInterval(send, ms);
  });
  call.on('end', () => { stop(); call.end(); });
  call.on('error', stop);
  call.on('cancelled', stop);
}

// Pre-encoded responses (Buffers) pass through as they are.
const svc = gnmi.gNMI.service;
const encode = svc.Subscribe.responseSerialize;
const service = {...svc, Subscribe: {...svc.Subscribe,
  responseSerialize: (v) => Buffer.isBuffer(v) ? v : encode(v)}};

const synthetic = Number(args.synthetic || 0);
const syntheticStreams = new Set();
let syntheticRound = 0;
function syntheticBuffers() {
  const r = ++syntheticRound;
  const ts = String(BigInt(Date.now()) * 1000000n);
  const u = (name, val) => ({path: {elem: name.split('/').map(
      (n) => ({name: n, key: {}}))}, val});
  const num = (v) => ({uint_val: String(v)});
  const out = [];
  for (let p = 1; p <= synthetic; p++) {
    const port = 'swp' + p;
    const base = r * 1000 + p;
    out.push({timestamp: ts, prefix: {elem: [{name: 'interfaces', key: {}},
        {name: 'interface', key: {name: port}}]}, update: [
      ...['in-octets', 'out-octets', 'in-pkts', 'out-pkts', 'in-errors',
          'in-discards', 'out-discards', 'out-errors', 'tx-wait',
          'carrier-transitions'].map((l, i) =>
          u('state/counters/' + l, num(base * (i + 1)))),
      u('state/oper-status', {string_val: 'UP'}),
      u('ethernet/state/port-speed', {string_val: 'SPEED_400GB'})]});
    for (const q of ['0', '3']) {
      out.push({timestamp: ts, prefix: {elem: [{name: 'qos', key: {}},
          {name: 'interfaces', key: {}},
          {name: 'interface', key: {'interface-id': port}},
          {name: 'output', key: {}}, {name: 'queues', key: {}},
          {name: 'queue', key: {name: q}}]}, update:
        ['ecn-marked-pkts', 'no-buffer-uc-dropped-pkts', 'transmit-pkts',
         'transmit-octets', 'max-queue-len'].map((l, i) =>
            u('state/' + l, num(base + i)))});
    }
    out.push({timestamp: ts, prefix: {elem: [{name: 'qos', key: {}},
        {name: 'interfaces', key: {}},
        {name: 'interface', key: {'interface-id': port}},
        {name: 'switch-priority', key: {priority: '3'}}]}, update: [
      u('state/counters/in-pause-pkts', num(base)),
      u('state/counters/out-pause-pkts', num(base + 1)),
      u('state/in-pause-duration', num(base * 10)),
      u('state/out-pause-duration', num(base * 11))]});
    out.push({timestamp: ts, prefix: {elem: [{name: 'lldp', key: {}},
        {name: 'interfaces', key: {}}, {name: 'interface', key: {name: port}},
        {name: 'neighbors', key: {}}, {name: 'neighbor', key: {id: '1'}}]},
      update: [u('state/system-name', {string_val: 'host' + p}),
               u('state/port-description', {string_val: 'eth0'})]});
  }
  return out.map((n) => encode({update: n}));
}
if (synthetic > 0) {
  setInterval(() => {
    if (!syntheticStreams.size) return;
    const buffers = syntheticBuffers();
    for (const call of syntheticStreams) {
      for (const b of buffers) call.write(b);
    }
  }, 1000);
}

const server = new grpc.Server();
server.addService(service, {Subscribe: subscribe});
let creds = grpc.ServerCredentials.createInsecure();
if (args.cert) {
  const ca = args.ca ? fs.readFileSync(args.ca) : null;
  creds = grpc.ServerCredentials.createSsl(
      ca, [{cert_chain: fs.readFileSync(args.cert),
            private_key: fs.readFileSync(args.key)}], !!ca);
}
const count = Number(args.ports || 1);
const bound = [];
for (let i = 0; i < count; i++) {
  server.bindAsync('127.0.0.1:' + (args.port || '0'), creds, (err, port) => {
    if (err) { console.error(err.message); process.exit(1); }
    bound.push(port);
    if (bound.length === count) console.log('listening ' + bound.join(' '));
  });
}

let commands = 0;
readline.createInterface({input: process.stdin}).on('line', (line) => {
  const words = line.trim().split(/\s+/);
  try {
    if (words[0] === 'set') {
      leaves.set(words[1], {elem: parsePath(words[1]),
                            val: typed(words[2], words.slice(3).join(' '))});
    } else if (words[0] === 'grow') {
      leaves.set(words[1], {elem: parsePath(words[1]), rate: Number(words[2]),
                            since: Date.now()});
    } else if (words[0] === 'del') {
      leaves.delete(words[1]);
      deleted.push(parsePath(words[1]));
    } else if (words[0] === 'mode') {
      mode = words[1];
      if (mode === 'drop') {
        for (const s of streams) s.dropping = true;
        mode = 'normal';
      }
    } else if (words[0] === 'stats') {
      console.log('subscribes ' + subscribes);
    } else if (words[0]) {
      throw new Error('unknown command ' + words[0]);
    }
    console.log('ok ' + (++commands));
  } catch (e) {
    console.log('error ' + e.message);
  }
}).on('close', () => process.exit(0));
