import { describe, expect, it } from 'vitest';
import { describePrincipalKey, osPrincipal, principalKey, tokenPrincipal } from '../../src/core/principal.js';

describe('describePrincipalKey: a key from elsewhere, as a log line shows it', () => {
  it('reads as where it comes from and subject@issuer (or machine)', () => {
    const alice = tokenPrincipal({ sub: 'alice', iss: 'https://idp.example' }, []);
    expect(describePrincipalKey(principalKey(alice))).toBe('token principal "alice@https://idp.example"');
    const os = osPrincipal();
    expect(describePrincipalKey(principalKey(os))).toBe(`os principal "${os.subject}@${os.hostname}"`);
    expect(describePrincipalKey('anonymous\u0000\u0000anonymous')).toBe('anonymous principal "anonymous"');
  });

  it('quotes what it names, and shows a key of any other shape whole: a forged one cannot add a log line', () => {
    expect(describePrincipalKey('token\u0000https://idp\u0000eve\nfake line')).toBe(
      'token principal "eve\\nfake line@https://idp"',
    );
    expect(describePrincipalKey('not a key')).toBe('the principal key "not a key"');
    expect(describePrincipalKey('a\u0000b\u0000c\u0000d')).toBe(
      'the principal key "a\\u0000b\\u0000c\\u0000d"',
    );
  });
});
