/**
 * What both processes of the JavaScript judge share (see node-judge.ts): the channel, length-prefixed
 * JSON frames over one socket either side may call on, read and written with synchronous calls; and
 * the codec, which turns plain data of exact builtin types into tagged JSON and back into fresh
 * objects, and hands anything else to the side's own `opaque` (out) and `reference` (in).
 *
 * A value's type is decided by its internal slots and its exact prototype (`util.types`,
 * `Object.getPrototypeOf`), never by what the object says of itself; a Proxy, an accessor or a
 * subclass is not plain data and crosses as a handle.
 */
export const NODE_CHANNEL = String.raw`
const channelFs = require("node:fs");
const channelTypes = require("node:util").types;

/** Sleeps a blocked reader without burning a core, once a short spin found nothing. */
const pause = new Int32Array(new SharedArrayBuffer(4));

function makeChannel(fd, serve) {
  const scratch = Buffer.alloc(1 << 16);
  let buffered = Buffer.alloc(0);
  const writeAll = (data) => {
    let at = 0;
    let tries = 0;
    while (at < data.length) {
      try {
        at += channelFs.writeSync(fd, data, at, data.length - at);
        tries = 0;
      } catch (error) {
        if (error.code !== "EAGAIN") throw error;
        if (++tries > 200) Atomics.wait(pause, 0, 0, 1);
      }
    }
  };
  const send = (message) => {
    const body = Buffer.from(JSON.stringify(message));
    const head = Buffer.alloc(4);
    head.writeUInt32BE(body.length, 0);
    writeAll(Buffer.concat([head, body]));
  };
  /** The next frame, or null at the end of the channel. Its parts are joined once it is whole. */
  const receive = () => {
    let tries = 0;
    const parts = [buffered];
    let have = buffered.length;
    for (;;) {
      if (have >= 4) {
        if (parts.length > 1) buffered = Buffer.concat(parts.splice(0, parts.length), have);
        parts.length = 0;
        parts.push(buffered);
        const size = buffered.readUInt32BE(0);
        if (have >= 4 + size) {
          const frame = JSON.parse(buffered.toString("utf8", 4, 4 + size));
          buffered = buffered.subarray(4 + size);
          return frame;
        }
      }
      const wanted = have >= 4 ? 4 + buffered.readUInt32BE(0) - have : 4 - have;
      for (let left = wanted; left > 0; ) {
        let count;
        try {
          count = channelFs.readSync(fd, scratch, 0, scratch.length, null);
        } catch (error) {
          if (error.code === "EAGAIN") {
            if (++tries > 2000) Atomics.wait(pause, 0, 0, 1);
            continue;
          }
          if (error.code === "ECONNRESET" || error.code === "EBADF") return null;
          throw error;
        }
        if (count === 0) {
          buffered = Buffer.concat(parts, have);
          return null;
        }
        tries = 0;
        parts.push(Buffer.from(scratch.subarray(0, count)));
        have += count;
        left -= count;
      }
    }
  };
  /** Sends a request and serves the other side's requests (callbacks) until its answer comes. */
  const request = (message) => {
    send(["q", message]);
    for (;;) {
      const incoming = receive();
      if (incoming === null) return null;
      if (incoming[0] === "a") return incoming;
      if (incoming[0] === "exit") return incoming;
      send(["a", serve(incoming[1])]);
    }
  };
  /** Frames that came with a chunk read by someone else (the program side's socket). */
  const feed = (chunk) => {
    buffered = buffered.length === 0 ? chunk : Buffer.concat([buffered, chunk]);
  };
  const pending = () => {
    if (buffered.length < 4) return null;
    const size = buffered.readUInt32BE(0);
    if (buffered.length < 4 + size) return null;
    const frame = JSON.parse(buffered.toString("utf8", 4, 4 + size));
    buffered = buffered.subarray(4 + size);
    return frame;
  };
  return { send, receive, request, feed, pending };
}

const TYPED_ARRAYS = {
  Int8Array, Uint8Array, Uint8ClampedArray, Int16Array, Uint16Array, Int32Array, Uint32Array,
  Float32Array, Float64Array, BigInt64Array, BigUint64Array,
};
const MAX_DEPTH = 64;
/**
 * Methods by which an object converts or describes itself (a valueOf decides a loose ==): an object
 * with one of its own crosses as a handle, whose conversions the receiving side decides, and a
 * decoded plain object never carries one.
 */
const SELF_DESCRIBING = new Set(["valueOf", "toString", "toLocaleString", "toJSON", "then"]);

/**
 * encode(value) gives tagged JSON; decode(data) fresh objects. opaque(value) tags what is not plain
 * data, reference(data) turns such a tag back into this side's value.
 */
function makeCodec(opaque, reference) {
  const getPrototypeOf = Object.getPrototypeOf;
  const ownKeys = Reflect.ownKeys;
  const describe = Object.getOwnPropertyDescriptor;
  const mapEntries = Map.prototype.entries;
  const setValues = Set.prototype.values;
  const getTime = Date.prototype.getTime;
  const isArray = Array.isArray;
  const arrayFrom = Array.from;
  const numberTag = (value) => {
    if (value !== value || value === Infinity || value === -Infinity) return ["n", String(value)];
    return Object.is(value, -0) ? ["n", "-0"] : ["n", value];
  };

  /** The own data properties of a plain object or array, or null when one is an accessor or not a string key. */
  const dataEntries = (value) => {
    const entries = [];
    for (const key of ownKeys(value)) {
      if (typeof key !== "string") return null;
      const property = describe(value, key);
      if (!("value" in property)) return null;
      if (property.enumerable) entries.push([key, property.value]);
    }
    return entries;
  };

  const typedName = (value) => {
    const prototype = getPrototypeOf(value);
    if (typeof Buffer !== "undefined" && prototype === Buffer.prototype) return "Buffer";
    for (const name in TYPED_ARRAYS) if (prototype === TYPED_ARRAYS[name].prototype) return name;
    return null;
  };

  function encode(value, depth = 0, seen = new Set()) {
    switch (typeof value) {
      case "undefined":
        return ["u"];
      case "boolean":
        return ["b", value];
      case "string":
        return ["s", value];
      case "number":
        return numberTag(value);
      case "bigint":
        return ["i", value.toString()];
      case "symbol":
      case "function":
        return opaque(value);
    }
    if (value === null) return ["z"];
    if (depth > MAX_DEPTH || seen.has(value) || channelTypes.isProxy(value)) return opaque(value);
    const prototype = getPrototypeOf(value);
    seen.add(value);
    try {
      if (isArray(value) && prototype === Array.prototype) {
        const entries = dataEntries(value);
        if (entries === null || entries.length !== value.length) return opaque(value);
        return ["a", entries.map(([, item]) => encode(item, depth + 1, seen))];
      }
      if (prototype === Object.prototype || prototype === null) {
        const entries = dataEntries(value);
        if (entries === null) return opaque(value);
        if (entries.some(([key, item]) => SELF_DESCRIBING.has(key) && typeof item === "function")) return opaque(value);
        return ["o", entries.map(([key, item]) => [key, encode(item, depth + 1, seen)]), prototype === null];
      }
      if (channelTypes.isMap(value) && prototype === Map.prototype) {
        return ["m", arrayFrom(mapEntries.call(value), ([key, item]) => [encode(key, depth + 1, seen), encode(item, depth + 1, seen)])];
      }
      if (channelTypes.isSet(value) && prototype === Set.prototype) {
        return ["S", arrayFrom(setValues.call(value), (item) => encode(item, depth + 1, seen))];
      }
      if (channelTypes.isDate(value) && prototype === Date.prototype) return ["d", numberTag(getTime.call(value))];
      if (channelTypes.isTypedArray(value)) {
        const name = typedName(value);
        if (name !== null) {
          const items = arrayFrom(value, (item) => (typeof item === "bigint" ? item.toString() : numberTag(item)[1]));
          return ["t", name, items];
        }
      }
      return opaque(value);
    } finally {
      seen.delete(value);
    }
  }

  const number = (data) => (typeof data === "number" ? data : data === "-0" ? -0 : Number(data));

  function decode(data) {
    switch (data[0]) {
      case "u":
        return undefined;
      case "z":
        return null;
      case "b":
        return data[1] === true;
      case "s":
        return String(data[1]);
      case "n":
        return number(data[1]);
      case "i":
        return BigInt(data[1]);
      case "a":
        return data[1].map(decode);
      case "o": {
        const object = data[2] ? Object.create(null) : {};
        for (const [key, item] of data[1]) {
          const decoded = decode(item);
          if (SELF_DESCRIBING.has(key) && typeof decoded === "function") {
            throw new TypeError("selfheal: a plain object came with a " + key + " of its own; it crosses as a handle");
          }
          Object.defineProperty(object, key, { value: decoded, writable: true, enumerable: true, configurable: true });
        }
        return object;
      }
      case "m":
        return new Map(data[1].map(([key, item]) => [decode(key), decode(item)]));
      case "S":
        return new Set(data[1].map(decode));
      case "d":
        return new Date(number(data[1][1]));
      case "t": {
        const name = data[1];
        if (name === "Buffer") return Buffer.from(data[2].map(number));
        const Typed = Object.hasOwn(TYPED_ARRAYS, name) ? TYPED_ARRAYS[name] : null;
        if (Typed === null) return undefined;
        const bigints = name.startsWith("Big");
        return Typed.from(data[2], (item) => (bigints ? BigInt(item) : number(item)));
      }
      default:
        return reference(data);
    }
  }

  return { encode, decode };
}
`;
