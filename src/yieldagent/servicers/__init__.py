"""gRPC servicers: thin translation between protobuf messages and the domain."""
