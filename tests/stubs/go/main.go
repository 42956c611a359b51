// Command client is an example Go client of the yieldagent gRPC API, built on the stubs that
// `make stubs` generates. It creates the smart account of an EOA (SmartAccountService), reads a
// wallet (WalletService) and prints both answers as one JSON object on stdout.
//
// Usage:
//
//	PARTNER_NAME=acme PARTNER_API_KEY=... client -target 127.0.0.1:50051 -eoa 0x... -wallet 0x...
//
// The partner credentials travel as the gRPC metadata x-partner-name and x-partner-api-key.
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"time"

	yieldagentv1 "github.com/yieldagent/yieldagent/gen/yieldagent/v1"
	"google.golang.org/grpc"
	"google.golang.org/grpc/metadata"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
)

func main() {
	target := flag.String("target", "127.0.0.1:50051", "host:port of the gRPC server")
	eoa := flag.String("eoa", "", "EOA whose smart account to create")
	chain := flag.Int("chain", 8453, "EVM chain id")
	wallet := flag.String("wallet", "", "smart account address of the wallet to read")
	flag.Parse()
	if err := run(*target, *eoa, int32(*chain), *wallet); err != nil {
		fmt.Fprintln(os.Stderr, "client:", err)
		os.Exit(1)
	}
}

// run makes both calls and prints {"smartAccount": ..., "wallet": ...}.
func run(target, eoa string, chain int32, wallet string) error {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	// Plaintext HTTP/2, as the service's gRPC port speaks on 127.0.0.1.
	// (With grpc-go 1.34 or later: grpc.WithTransportCredentials(insecure.NewCredentials()).)
	conn, err := grpc.Dial(target, grpc.WithInsecure())
	if err != nil {
		return fmt.Errorf("dial %s: %w", target, err)
	}
	defer conn.Close()

	// Partner credentials go in the request metadata of every keyed call.
	ctx = metadata.AppendToOutgoingContext(ctx,
		"x-partner-name", os.Getenv("PARTNER_NAME"),
		"x-partner-api-key", os.Getenv("PARTNER_API_KEY"))

	accounts := yieldagentv1.NewSmartAccountServiceClient(conn)
	account, err := accounts.CreateSmartAccount(ctx, &yieldagentv1.CreateSmartAccountRequest{
		Eoa:   eoa,
		Chain: chain,
	})
	if err != nil {
		return fmt.Errorf("CreateSmartAccount: %w", err)
	}

	wallets := yieldagentv1.NewWalletServiceClient(conn)
	read, err := wallets.GetWallet(ctx, &yieldagentv1.GetWalletRequest{ChainId: chain, Wallet: wallet})
	if err != nil {
		return fmt.Errorf("GetWallet: %w", err)
	}

	out, err := json.Marshal(map[string]json.RawMessage{
		"smartAccount": asJSON(account),
		"wallet":       asJSON(read),
	})
	if err != nil {
		return err
	}
	fmt.Println(string(out))
	return nil
}

// asJSON is a message in the canonical proto3 JSON mapping.
func asJSON(message proto.Message) json.RawMessage {
	raw, err := protojson.Marshal(message)
	if err != nil {
		panic(err) // only a message with invalid UTF-8 fails, which the server never sends
	}
	return raw
}
