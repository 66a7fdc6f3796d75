/**
 * Redaction against the forms secrets take in real tool arguments: key names (short, compound,
 * non-English), URLs, command lines, name/value pairs, XML and YAML inside strings. Each form is
 * checked by its secret: the redacted record must not contain it. Then the other way round: a
 * corpus of ordinary prose, code, paths and identifiers must come out unchanged.
 */
import { describe, expect, it } from 'vitest';
import { createRedactor } from '../../src/features/audit/redact.js';

const redactor = createRedactor();

/** A secret no rule would take for anything else, so that finding it in the output means a leak. */
const S = 'Zq7wX9vK2mP4';

/** [form, arguments as a tool would receive them] — each holds `S` once, where a secret would be. */
const forms: [string, unknown][] = [
  // Key names.
  ['pwd', { pwd: S }],
  ['pass', { pass: S }],
  ['passcode', { passcode: S }],
  ['pin (number)', { pin: 7315, note: S.slice(0, 0) }],
  ['otp', { otp: S }],
  ['key', { key: S }],
  ['signature', { signature: S }],
  ['Api-Key', { 'Api-Key': S }],
  ['api_key', { api_key: S }],
  ['apiKey', { apiKey: S }],
  ['API KEY', { 'API KEY': S }],
  ['userPin', { userPin: S }],
  ['passwort', { passwort: S }],
  ['contraseña', { contraseña: S }],
  ['mot_de_passe', { mot_de_passe: S }],
  ['senha', { senha: S }],
  ['пароль', { пароль: S }],
  ['密码', { 密码: S }],
  ['an object under a secret key', { credentials: { user: 'ada', secret: S } }],
  ['an array under a secret key', { secrets: [S, S] }],
  ['a nested number under a secret key', { config: { otp: { value: S } } }],
  // URLs.
  ['?key= in a URL', { url: `https://maps.example.com/api?key=${S}&q=paris` }],
  ['token= in a URL', { url: `https://example.com/feed?token=${S}` }],
  ['X-Amz-Signature', { url: `https://b.s3.amazonaws.com/o?X-Amz-Expires=60&X-Amz-Signature=${S}` }],
  ['sig= (Azure SAS)', { url: `https://a.blob.core.windows.net/c/b?sv=2022-11-02&sig=${S}` }],
  ['userinfo password', { url: `https://ada:${S}@git.example.com/repo.git` }],
  ['Sentry DSN', { dsn: `https://${S}abcdef0123456789@o123456.ingest.sentry.io/4504` }],
  ['Slack webhook', { webhook: `https://hooks.slack.com/services/T00000000/B00000000/${S}` }],
  // Command lines.
  ['mysql -pX', { command: `mysql -u root -p${S} -h db.internal shop` }],
  ['--password=X', { command: `mongodump --username ada --password=${S} --db shop` }],
  ['--password X', { command: `psql-wrapper --password ${S} --host db` }],
  ['curl -u user:pass', { command: `curl -s -u ada:${S} https://api.example.com/v1/me` }],
  [
    '-H "Authorization: Bearer X"',
    { command: `curl -H "Authorization: Bearer ${S}" https://api.example.com` },
  ],
  ['argv ["--api-key", X]', { args: ['deploy', '--api-key', S, '--region', 'eu-west-1'] }],
  // Name/value pairs.
  ['[{name: GITHUB_TOKEN, value}]', { env: [{ name: 'GITHUB_TOKEN', value: S }] }],
  ['{key: X-API-KEY, value}', { headers: [{ key: 'X-API-KEY', value: S }] }],
  ['{Name, Value} (AWS style)', { Parameters: [{ Name: 'DbPassword', Value: S }] }],
  // XML and YAML inside a string.
  ['<password> element', { body: `<config><user>ada</user><password>${S}</password></config>` }],
  ['plist key/string', { plist: `<dict><key>API_TOKEN</key>\n<string>${S}</string></dict>` }],
  ['password: line in YAML text', { file: `db:\n  host: db.internal\n  password: ${S}\n  port: 5432\n` }],
  ['quoted YAML value', { file: `api:\n  api_key: "${S}"\n` }],
  ['.env text', { file: `NODE_ENV=production\nSTRIPE_SECRET=${S}\n` }],
  ['YAML block scalar |', { file: `db:\n  password: |\n    ${S}\n  port: 5432\n` }],
  ['YAML folded block >-', { file: `api:\n  api_key: >-\n    ${S}\n` }],
  ['YAML block with indentation indicator', { file: `token: |2\n    ${S}\n` }],
  ['YAML block under a quoted key', { file: `"client_secret": |+\n  ${S}\n` }],
  ['YAML block in a list item', { file: `users:\n  - password: |\n      ${S}\n` }],
  ['YAML value on the next line', { file: `secret:\n  ${S}\n` }],
  ['YAML value behind a tag', { file: `password: !!str ${S}\n` }],
  ['YAML value behind a local tag', { file: `password: !vault ${S}\n` }],
  ['YAML value behind an anchor', { file: `password: &pw ${S}\nother: *pw\n` }],
  ['YAML tag and anchor before a block', { file: `password: !!str &pw |\n  ${S}\n` }],
  ['YAML quoted key, flow mapping', { file: `db: {'password': ${S}, port: 1}\n` }],
  ['YAML in the second document', { file: `---\nname: app\n---\npassword: ${S}\n` }],
  ['YAML complex key', { file: `? password\n: ${S}\nport: 1\n` }],
  ['YAML complex key, quoted and nested', { file: `db:\n  ? "api_key"\n  : ${S}\n` }],
  ['YAML complex key, block value', { file: `? secret\n: |\n  ${S}\n` }],
  ['YAML complex key, value below', { file: `? token\n:\n  ${S}\n` }],
  ['escaped quote in a double-quoted value', { file: `password: "ab\\"${S}"\n` }],
  ['escaped quote in JSON text', { text: `{"password": "ab\\"${S}"}` }],
  ['escaped quote in JSON inside JSON text', { text: JSON.stringify(JSON.stringify({ token: `ab"${S}` })) }],
  ['YAML doubled quote in a single-quoted value', { file: `password: 'ab''${S}'\n` }],
];

describe('secret forms are all redacted', () => {
  it('covers at least 36 forms', () => {
    expect(forms.length).toBeGreaterThanOrEqual(36);
  });

  it.each(forms)('%s', (_form, args) => {
    const out = JSON.stringify(redactor.redactValue(args));
    expect(out).not.toContain(S);
    expect(out).not.toContain('7315');
    expect(out).toContain('[REDACTED');
  });

  it('keeps the parts around a secret that are not secret', () => {
    expect(redactor.redactValue({ env: [{ name: 'GITHUB_TOKEN', value: S }] })).toEqual({
      env: [{ name: 'GITHUB_TOKEN', value: '[REDACTED]' }],
    });
    expect(redactor.redactValue({ headers: [{ key: 'Content-Type', value: 'text/plain' }] })).toEqual({
      headers: [{ key: 'Content-Type', value: 'text/plain' }],
    });
    expect(redactor.redactText(`mysql -u root -p${S} shop`)).toBe(
      'mysql -u root -p[REDACTED:cli_password] shop',
    );
    expect(redactor.redactText(`<password>${S}</password>`)).toBe('<password>[REDACTED]</password>');
    expect(redactor.redactText(`https://maps.example.com/api?key=${S}&q=paris`)).toBe(
      'https://maps.example.com/api?key=[REDACTED]&q=paris',
    );
    expect(redactor.redactText(`db:\n  ? password\n  : ${S}\n  port: 5432\n`)).toBe(
      'db:\n  ? password\n  : [REDACTED]\n  port: 5432\n',
    );
    expect(redactor.redactText(`password: "ab\\"cd${S}" # note\nport: 1`)).toBe(
      'password: "[REDACTED]" # note\nport: 1',
    );
  });
});

describe('no false positives on ordinary text', () => {
  const corpus = [
    // Prose.
    'The key to a good migration is to test it on a copy first. Press any key to continue.',
    'The key: read the manual before you pass the exam.',
    'We pass the request through a proxy, then the monkey patch restores the keyboard layout.',
    'Pin the dependency to version 4.2 and keep the pinned list short; the spinner shows progress.',
    'A signature block at the end of the email is optional. Sign the form and pass it on.',
    'The session ended at noon. Authors, editors and the secretary signed the passport forms.',
    'She bypassed the compass and took the passage through the pass near the lake.',
    'Les mots de passe ne sont jamais stockés en clair ; le contrôle se fait par hachage.',
    'Use a primary key and a sort key for the table; the public key goes in the README.',
    // Code.
    'const key = crypto.randomUUID();\nfor (const [key, value] of map) console.log(key, value);',
    'def sign(message, *, key): return hmac.new(key, message, "sha256").hexdigest()',
    'SELECT id, name FROM users WHERE email = $1 ORDER BY created_at DESC LIMIT 20;',
    'if (password.length < 12) throw new Error("password too short");',
    'git commit -m "Fix key handling" && git push -u origin main',
    'docker run -u 1000:1000 -p 8080:80 -v /srv/data:/data nginx:1.27',
    'sort -u names.txt | uniq -c | head -n 20',
    'mysql --help | grep -- -p',
    'ls -la --color=auto /var/log',
    'npm install --save-dev typescript --registry https://registry.npmjs.org/',
    '<dict><key>CFBundleName</key><string>Notes</string></dict>',
    '<user><name>Ada</name><role>admin</role></user>',
    'server:\n  port: 8080\n  host: 0.0.0.0\n  key_file: /etc/ssl/private/server.key.pem\n',
    'description: |\n  A tool that reads files.\n  It never writes.\nname: reader\n',
    'steps:\n  - name: build\n    run: >-\n      npm ci &&\n      npm test\n',
    // Paths, identifiers, dates.
    '/home/ada/projects/keyring/src/passkeys/index.ts',
    'C:\\Users\\Ada\\AppData\\Roaming\\Claude\\claude_desktop_config.json',
    '123e4567-e89b-12d3-a456-426614174000',
    'commit 3f2c1a9e8b7d6c5f4e3d2c1b0a9f8e7d6c5b4a39',
    '2025-06-18T12:34:56.789Z and 2024-02-29',
    'https://github.com/modelcontextprotocol/servers/tree/main/src/filesystem#readme',
    'https://example.com/search?q=monkey&page=2&sort=asc',
    'ssh://git@github.com/ada/dotfiles.git',
  ];

  it.each(corpus)('%j', (text) => {
    expect(redactor.redactText(text)).toBe(text);
    expect(redactor.redactValue({ text })).toEqual({ text });
  });

  it.each([
    ['keyboard', 'qwerty'],
    ['monkey', 'george'],
    ['key_id', 'AKID-1'],
    ['keyName', 'main'],
    ['public_key', 'ssh-ed25519 AAAA'],
    ['sort_key', 'created_at'],
    ['pinned', true],
    ['spin', 3],
    ['passThrough', true],
    ['bypass', 'cache'],
    ['signatureVersion', 4],
    ['tokens', 12],
    ['max_tokens', 512],
  ])('keeps the value of %s', (key, value) => {
    expect(redactor.redactValue({ [key]: value })).toEqual({ [key]: value });
  });
});
