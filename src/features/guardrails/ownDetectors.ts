/**
 * mcp-warden's own detectors: the secrets secretlint's recommended preset has no rule for, and
 * personal data. Each shape is checked further where a checksum or a structure allows (Luhn for
 * card numbers, mod 97 for IBANs, a JSON header for JWTs), since the shapes alone match too much
 * ordinary text (ids, hashes, timestamps).
 */

/** One match: what it is and where it lies in the scanned text (end exclusive). */
export interface Finding {
  readonly category: string;
  readonly start: number;
  readonly end: number;
}

interface OwnRule {
  readonly category: string;
  /** Global. */
  readonly pattern: RegExp;
  /** Whether the match really is one (a checksum, a structure); absent: the shape is enough. */
  readonly check?: (match: string) => boolean;
}

/**
 * Google API keys are `AIza` and 35 characters of base64url (39 in all); neighbours that could
 * extend the key are ruled out so a longer token is not cut into a false one.
 */
const GOOGLE_API_KEY = /(?<![A-Za-z0-9_-])AIza[0-9A-Za-z_-]{35}(?![A-Za-z0-9_-])/g;

/**
 * A JWT: three base64url parts, the first two JSON objects (so both start `eyJ`, the encoding of
 * `{"`). Only a signed one is a credential: the signature part must be there.
 */
const JWT =
  /(?<![A-Za-z0-9_-])eyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{4,}\.[A-Za-z0-9_-]{16,}(?![A-Za-z0-9_-])/g;

/** A JWT's header decodes to a JSON object naming its algorithm: random `eyJ…` text does not. */
function isJwt(match: string): boolean {
  const header = match.slice(0, match.indexOf('.'));
  try {
    const parsed = JSON.parse(Buffer.from(header, 'base64url').toString('utf8')) as unknown;
    return (
      typeof parsed === 'object' && parsed !== null && typeof (parsed as { alg?: unknown }).alg === 'string'
    );
  } catch {
    return false;
  }
}

/** An address: a local part, `@`, and a domain whose last label is letters only. */
const EMAIL =
  /(?<![A-Za-z0-9._%+-])[A-Za-z0-9](?:[A-Za-z0-9._%+-]{0,63})@(?:[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?\.)+[A-Za-z]{2,24}(?![A-Za-z0-9-])/g;

/**
 * A phone number written as one: international (`+` and a country code) with 8 to 15 digits, or
 * the North American grouping `(555) 123-4567` / `555-123-4567`. A bare run of digits is not
 * taken: ids, amounts and timestamps are too often such runs.
 */
const PHONE =
  /(?<![\w+.-])(?:\+\d{1,3}(?:[ .-]?\(?\d{1,4}\)?){1,4}[ .-]?\d{2,4}|\(\d{3}\) ?\d{3}[ .-]\d{4}|\d{3}[.-]\d{3}[.-]\d{4})(?![\w.-]?\d)/g;

function phoneDigits(match: string): boolean {
  const digits = match.replace(/\D/g, '').length;
  return digits >= 8 && digits <= 15;
}

/** 13 to 19 digits, in groups split by one kind of separator (a space or a dash) or none. */
const CARD = /(?<![\d.,-])\d{4}(?:([ -]?)\d{2,6}){2,4}(?![\d]|[.,-]\d)/g;

/** Issuer prefixes of the card networks in use (Visa, Mastercard, Amex, Discover, JCB, Diners). */
const CARD_ISSUER = /^(?:4|5[1-5]|2[2-7]|3[47]|6011|65|64[4-9]|35|36|38|30[0-5])/;

function isCardNumber(match: string): boolean {
  const separators = new Set(match.replace(/\d/g, ''));
  if (separators.size > 1) return false;
  const digits = match.replace(/\D/g, '');
  if (digits.length < 13 || digits.length > 19 || !CARD_ISSUER.test(digits)) return false;
  // One repeated digit passes Luhn for some lengths and is never a card.
  if (/^(\d)\1+$/.test(digits)) return false;
  return luhn(digits);
}

/** The Luhn checksum: every second digit from the right doubled, the sum a multiple of ten. */
export function luhn(digits: string): boolean {
  let sum = 0;
  for (let i = 0; i < digits.length; i++) {
    let d = digits.charCodeAt(digits.length - 1 - i) - 48;
    if (i % 2 === 1) {
      d *= 2;
      if (d > 9) d -= 9;
    }
    sum += d;
  }
  return sum % 10 === 0;
}

/** Country code, two check digits, then up to 30 letters or digits, in groups of four or not. */
const IBAN = /(?<![A-Za-z0-9])[A-Z]{2}\d{2}(?: ?[A-Z0-9]{4}){2,7}(?: ?[A-Z0-9]{1,4})?(?![A-Za-z0-9])/g;

/** The length of an IBAN in each country that issues them (ISO 13616 registry). */
const IBAN_LENGTHS: Readonly<Record<string, number>> = Object.fromEntries(
  (
    'AD24 AE23 AL28 AT20 AZ28 BA20 BE16 BG22 BH22 BI27 BR29 BY28 CH21 CR22 CY28 CZ24 DE22 DJ27 DK18 ' +
    'DO28 EE20 EG29 ES24 FI18 FK18 FO18 FR27 GB22 GE22 GI23 GL18 GR27 GT28 HR21 HU28 IE22 IL23 IQ23 ' +
    'IS26 IT27 JO30 KW30 KZ20 LB28 LC32 LI21 LT20 LU20 LV21 LY25 MC27 MD24 ME22 MK19 MN20 MR27 MT31 ' +
    'MU30 NI28 NL18 NO15 OM23 PK24 PL28 PS29 PT25 QA29 RO24 RS22 RU33 SA24 SC31 SD18 SE24 SI19 SK24 ' +
    'SM27 SO23 ST25 SV28 TL23 TN24 TR26 UA29 VA22 VG24 XK20 YE30'
  )
    .split(' ')
    .map((entry) => [entry.slice(0, 2), Number(entry.slice(2))]),
);

/** Right length for its country, and the ISO 7064 mod 97 check (the remainder is 1). */
export function isIban(match: string): boolean {
  const iban = match.replace(/ /g, '');
  if (IBAN_LENGTHS[iban.slice(0, 2)] !== iban.length) return false;
  const rearranged = iban.slice(4) + iban.slice(0, 4);
  let remainder = 0;
  for (const char of rearranged) {
    const value = char >= 'A' ? String(char.charCodeAt(0) - 55) : char;
    for (const digit of value) remainder = (remainder * 10 + (digit.charCodeAt(0) - 48)) % 97;
  }
  return remainder === 1;
}

const OWN_RULES: readonly OwnRule[] = [
  { category: 'google-api-key', pattern: GOOGLE_API_KEY },
  { category: 'jwt', pattern: JWT, check: isJwt },
  { category: 'email', pattern: EMAIL },
  { category: 'phone', pattern: PHONE, check: phoneDigits },
  { category: 'card-number', pattern: CARD, check: isCardNumber },
  { category: 'iban', pattern: IBAN, check: isIban },
];

/** A pattern of the user's own (`guardrails.patterns`), compiled once. */
export interface UserPattern {
  readonly name: string;
  /** Global. */
  readonly regex: RegExp;
}

/** What the built-in own rules and the user's patterns find in `text`. */
export function ownFindings(text: string, patterns: readonly UserPattern[]): Finding[] {
  const found: Finding[] = [];
  for (const rule of OWN_RULES) collect(text, rule.category, rule.pattern, rule.check, found);
  for (const pattern of patterns) collect(text, pattern.name, pattern.regex, undefined, found);
  return found;
}

function collect(
  text: string,
  category: string,
  pattern: RegExp,
  check: ((match: string) => boolean) | undefined,
  into: Finding[],
): void {
  pattern.lastIndex = 0;
  for (const match of text.matchAll(pattern)) {
    // An empty match finds nothing to hide (and a user's pattern may allow one).
    if (match[0].length === 0) continue;
    if (check !== undefined && !check(match[0])) continue;
    into.push({ category, start: match.index, end: match.index + match[0].length });
  }
}
