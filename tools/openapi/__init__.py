"""The OpenAPI document of the partner REST API, generated from the protos (``make openapi``)."""
