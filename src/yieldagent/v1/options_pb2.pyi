from google.protobuf import descriptor_pb2 as _descriptor_pb2
from google.protobuf import descriptor as _descriptor
from typing import ClassVar as _ClassVar

DESCRIPTOR: _descriptor.FileDescriptor
HTTP_SUCCESS_CODE_FIELD_NUMBER: _ClassVar[int]
http_success_code: _descriptor.FieldDescriptor
PARTNER_PERMISSION_FIELD_NUMBER: _ClassVar[int]
partner_permission: _descriptor.FieldDescriptor
IDEMPOTENT_FIELD_NUMBER: _ClassVar[int]
idempotent: _descriptor.FieldDescriptor
JSON_INTEGER_FIELD_NUMBER: _ClassVar[int]
json_integer: _descriptor.FieldDescriptor
