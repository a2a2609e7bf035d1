// Runs the CLI from source for tests that need a real separate process.
import { main } from '../../src/cli/main.js';

await main(process.argv, process.env);
