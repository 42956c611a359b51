"""Pure domain logic: no I/O, no gRPC, no SQL."""
