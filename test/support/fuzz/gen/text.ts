import fc from 'fast-check'

/**
 * Strings a careless or hostile client sends: control characters, lone surrogates, emoji, RTL marks, NUL, JSON and
 * SQL and LIKE metacharacters, prototype names, and whatever unicode fast-check finds.
 */
export const junkText: fc.Arbitrary<string> = fc.oneof(
  fc.constantFrom(
    '',
    ' ',
    '\u0000',
    '\ud800',
    '\udfff',
    '\u202e',
    '\ufeff',
    '😀',
    'a\nb',
    '\r\n',
    "'; DROP TABLE messages; --",
    '%',
    '_',
    '\\',
    '"',
    '__proto__',
    'constructor',
    'toString',
    'null',
    'undefined',
    'NaN',
  ),
  fc.string({ unit: 'binary', maxLength: 40 }),
  fc.string({ unit: 'grapheme', maxLength: 40 }),
)

/** Numbers as text at the edges of what parsers take. */
export const edgeNumberText: fc.Arbitrary<string> = fc.oneof(
  fc.constantFrom('0', '-0', '1', '-1', '1.5', '1e3', '1E-400', '1e400', '0x10', '0b1', '0o7', 'Infinity', '-Infinity', 'NaN', '00001', '+1', ' 1', '1 ', '9007199254740993', '18446744073709551616'),
  fc.integer({ min: 16, max: 400 }).map((n) => '9'.repeat(n)),
  fc.bigInt({ min: -(10n ** 30n), max: 10n ** 30n }).map(String),
  fc.double({ noNaN: false }).map(String),
)
