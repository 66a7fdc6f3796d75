/** Spellings of a path in /etc that a pattern on the raw text (`'^/etc/'`) lets through. */
export const ETC_SPELLINGS: readonly string[] = [
  '//etc/passwd',
  '/./etc/passwd',
  '/tmp/../etc/passwd',
  '/etc',
  'file:///etc/passwd',
];
