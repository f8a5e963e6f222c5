import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { UsageError } from '../../cli/errors.ts';
import { envName, helpRow, parseArgv, parseBoolean, type ArgvOptions } from '../../cli/flags.ts';
import { parseControllerConfig } from '../../controller/config/parse.ts';
import { parseConfig } from '../../plugin/config.ts';

const FLAGS: ArgvOptions['flags'] = [{ name: 'mode' }, { name: 'dry-run', boolean: true }, { name: 'set', repeatable: true }];

function read(argv: readonly string[], extra: Partial<ArgvOptions> = {}): { help: boolean; values: Record<string, readonly string[]>; positionals: string[] } {
  const positionals: string[] = [];
  const parsed = parseArgv(argv, { flags: FLAGS, helpCommand: 'driftless test', onPositional: (arg) => positionals.push(arg), ...extra });
  return { help: parsed.help, values: Object.fromEntries(parsed.values), positionals };
}

function refuses(argv: readonly string[], message: string, extra: Partial<ArgvOptions> = {}): void {
  assert.throws(() => read(argv, extra), (error: unknown) => error instanceof UsageError && error.message === message);
}

describe('cli parseArgv', () => {
  it('reads --name value and --name=value, bare booleans as true, repeatable flags in order, positionals in order', () => {
    const parsed = read(['a', '--mode', 'all', '--dry-run', '-', '--set=x=1,y', '--set', 'z=2']);
    assert.deepEqual(parsed, { help: false, values: { mode: ['all'], 'dry-run': ['true'], set: ['x=1,y', 'z=2'] }, positionals: ['a', '-'] });
    assert.deepEqual(read(['--dry-run=false']).values, { 'dry-run': ['false'] });
  });

  it('never lets a bare boolean or a missing value swallow the next flag', () => {
    assert.deepEqual(read(['--dry-run', 'x']).positionals, ['x']);
    refuses(['--mode', '--dry-run'], '--mode needs a value');
    refuses(['--mode'], '--mode needs a value: all or none', { expects: () => 'all or none' });
    // A lone "--" is a value like any other (the flag table decides what it means).
    assert.deepEqual(read(['--mode', '--']).values, { mode: ['--'] });
  });

  it('refuses unknown flags, repeats of a single flag and (when asked) empty values, naming the flag', () => {
    refuses(['--nope'], 'unknown flag --nope (see driftless test --help)');
    refuses(['--mode=a', '--mode', 'b'], '--mode given twice');
    assert.deepEqual(read(['--mode=']).values, { mode: [''] });
    refuses(['--mode='], '--mode needs a value (omit the flag for the default)', { refuseEmpty: true });
  });

  it('reads a short alias as its flag, and refuses unknown short flags', () => {
    const flags = [...FLAGS, { name: 'namespace', short: 'n' }];
    assert.deepEqual(read(['-n', 'web'], { flags }).values, { namespace: ['web'] });
    assert.deepEqual(read(['-n=web'], { flags }).values, { namespace: ['web'] });
    refuses(['-n', 'a', '--namespace', 'b'], '--namespace given twice', { flags });
    refuses(['--mode', '-n', 'web'], '--mode needs a value', { flags });
    refuses(['-x'], 'unknown flag -x (see driftless test --help)', { flags });
  });

  it('notes --help and -h anywhere, after checking the rest', () => {
    assert.equal(read(['--mode', 'x', '-h']).help, true);
    assert.equal(read(['--help']).help, true);
    refuses(['--help', '--nope'], 'unknown flag --nope (see driftless test --help)');
  });
});

describe('cli parseBoolean: one behaviour for flags and environment, plugin and controller', () => {
  it('accepts true and false in any case with spaces around, nothing else', () => {
    for (const text of ['true', 'TRUE', 'True', ' true ', '\ttRuE\n']) assert.equal(parseBoolean(text), true, JSON.stringify(text));
    for (const text of ['false', 'FALSE', 'False', ' false']) assert.equal(parseBoolean(text), false, JSON.stringify(text));
    for (const text of ['', 'yes', 'no', '1', '0', 't', 'f', 'on', 'true!', 'tru e']) assert.equal(parseBoolean(text), undefined, JSON.stringify(text));
  });

  it('is what both programs accept, from a flag and from the environment', () => {
    const cases: [string, boolean | undefined][] = [['True', true], [' FALSE ', false], ['yes', undefined], ['1', undefined]];
    for (const [text, expected] of cases) {
      const plugin = (argv: string[], env: Record<string, string>): boolean => parseConfig(argv, env, '/app').allowEmpty;
      const controller = (argv: string[], env: Record<string, string>): boolean => {
        const config = parseControllerConfig(argv, env);
        assert.equal(config.command, 'run');
        return config.dryRun;
      };
      const attempts: [string, () => boolean][] = [
        ['plugin flag', () => plugin(['generate', `--allow-empty=${text}`], {})],
        ['plugin env', () => plugin(['generate'], { DRIFTLESS_ALLOW_EMPTY: text })],
        ['controller flag', () => controller([`--dry-run=${text}`], {})],
        ['controller env', () => controller([], { DRIFTLESS_DRY_RUN: text })],
      ];
      for (const [where, attempt] of attempts) {
        if (expected === undefined) assert.throws(attempt, UsageError, `${where} ${JSON.stringify(text)}`);
        else assert.equal(attempt(), expected, `${where} ${JSON.stringify(text)}`);
      }
    }
  });
});

describe('cli envName and helpRow', () => {
  it('derives environment names and lays out one help entry', () => {
    assert.equal(envName('max-concurrent-restarts'), 'MAX_CONCURRENT_RESTARTS');
    assert.deepEqual(helpRow({ synopsis: '--mode all|none', shownDefault: 'all', description: 'What.', env: 'DRIFTLESS_MODE' }), [
      '  --mode all|none   (default: all)',
      '      What.',
      '      env: DRIFTLESS_MODE',
    ]);
    assert.equal(helpRow({ synopsis: '--x N', shownDefault: '', description: 'd', env: 'X' })[0], '  --x N');
  });
});
