"""Code generated from protos/yieldagent/v1 by `make protos`. Do not edit."""
