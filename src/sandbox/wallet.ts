import { SandboxApiError } from './errors.js';
import type { EventLog } from './events.js';

export interface WalletOptions {
  /** Opening balance, minor units. */
  balance?: number;
  currency?: string;
  /** What one recipient costs on the live plane, minor units. */
  pricePerRecipient?: number;
}

export interface Wallet {
  readonly balance: number;
  readonly currency: string;
  readonly pricePerRecipient: number;
  /** Refuses with 402 before anything is created when the balance cannot cover it. */
  ensure(amount: number): void;
  /** `at`: the instant of the send that costs it. */
  debit(amount: number, correspondenceId: string, at: number): void;
  fund(amount: number): number;
}

/** The live plane's prepaid wallet: sends debit it and fire wallet.debited. */
export function createWallet(options: WalletOptions, events: () => EventLog): Wallet {
  let balance = options.balance ?? 10_000_000;
  const currency = options.currency ?? 'NGN';
  const pricePerRecipient = options.pricePerRecipient ?? 50;
  return {
    get balance() {
      return balance;
    },
    currency,
    pricePerRecipient,
    ensure(amount) {
      if (amount > balance) {
        throw new SandboxApiError(
          402,
          'insufficient_funds',
          `This send costs ${amount} and the wallet holds ${balance} (${currency} minor units); fund it with POST /sandbox/wallet/fund.`,
          {
            required: amount,
            balance,
          },
        );
      }
    },
    debit(amount, correspondenceId, at) {
      balance -= amount;
      events().emit(
        'wallet.debited',
        { amount, currency, correspondence_id: correspondenceId, balance },
        { correspondenceId, plane: 'live', at },
      );
    },
    fund(amount) {
      balance += amount;
      return balance;
    },
  };
}
