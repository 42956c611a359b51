/**
 * An example TypeScript client of the yieldagent gRPC API, built on the stubs that
 * `make stubs` generates (protoc-gen-es service descriptors, run by @connectrpc/connect over
 * Node's HTTP/2 gRPC transport). It creates the smart account of an EOA
 * (SmartAccountService), reads a wallet (WalletService) and prints both answers as one JSON
 * object on stdout.
 *
 * Usage:
 *   PARTNER_NAME=acme PARTNER_API_KEY=... node client.js TARGET EOA WALLET [CHAIN]
 * where TARGET is the gRPC server's host:port (plaintext HTTP/2).
 */
import { toJson } from "@bufbuild/protobuf";
import { ConnectError, createClient, type Interceptor } from "@connectrpc/connect";
import { createGrpcTransport } from "@connectrpc/connect-node";

import {
  CreateSmartAccountResponseSchema,
  SmartAccountService,
} from "../../../build/gen/ts/yieldagent/v1/smart_accounts_pb.js";
import { WalletSchema, WalletService } from "../../../build/gen/ts/yieldagent/v1/wallets_pb.js";

/** Adds the partner credentials to the request metadata of every call. */
function partnerCredentials(name: string, apiKey: string): Interceptor {
  return (next) => async (request) => {
    request.header.set("x-partner-name", name);
    request.header.set("x-partner-api-key", apiKey);
    return next(request);
  };
}

async function main(argv: string[]): Promise<void> {
  const [target, eoa, wallet, chain = "8453"] = argv;
  if (!target || !eoa || !wallet) {
    throw new Error("usage: client TARGET EOA WALLET [CHAIN]");
  }
  const transport = createGrpcTransport({
    baseUrl: `http://${target}`,
    interceptors: [
      partnerCredentials(process.env.PARTNER_NAME ?? "", process.env.PARTNER_API_KEY ?? ""),
    ],
  });
  const accounts = createClient(SmartAccountService, transport);
  const wallets = createClient(WalletService, transport);

  const account = await accounts.createSmartAccount({ eoa, chain: Number(chain) });
  const read = await wallets.getWallet({ chainId: Number(chain), wallet });

  console.log(
    JSON.stringify({
      smartAccount: toJson(CreateSmartAccountResponseSchema, account),
      wallet: toJson(WalletSchema, read),
    }),
  );
}

main(process.argv.slice(2)).catch((error: unknown) => {
  // A failed call is a ConnectError: "[unauthenticated] ..." names the gRPC status code.
  console.error("client:", error instanceof ConnectError ? error.message : error);
  process.exit(1);
});
