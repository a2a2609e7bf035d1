import fs from 'node:fs';
import { ConfigError } from '../errors.js';

/** A setting's file (a mounted secret, a certificate), or a ConfigError naming the setting. */
export function readSettingFile(setting: string, file: string): Buffer {
  try {
    return fs.readFileSync(file);
  } catch (err) {
    throw new ConfigError(setting, `cannot read ${file}: ${(err as NodeJS.ErrnoException).code ?? (err as Error).message}`, { cause: err });
  }
}
