"""The service as a process: the composition root, the gRPC server, the background worker,
the Envoy edge and the system clock."""
