// Seeded randomness, so that the same conversation always gets the same reply: the hash
// that seeds it, the generator, and text cut into pieces at seeded lengths.

export function fnv1a(text) {
  let hash = 0x811c9dc5;
  for (let i = 0; i < text.length; i++) {
    hash ^= text.charCodeAt(i);
    hash = Math.imul(hash, 0x01000193) >>> 0;
  }
  return hash;
}

// mulberry32: a tiny seeded generator, so the same conversation gives the same reply.
export function seededRandom(seed) {
  let state = seed >>> 0;
  return () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

// Text cut into pieces of 1 to `longest` characters (whole code points: never half of a
// surrogate pair), at seeded random lengths.
export function pieces(text, random, longest) {
  const points = Array.from(text);
  const result = [];
  for (let i = 0; i < points.length;) {
    const length = 1 + Math.floor(random() * longest);
    result.push(points.slice(i, i + length).join(""));
    i += length;
  }
  return result;
}
