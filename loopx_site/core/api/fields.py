"""Serializer fields shared by every app's API."""

from django.core.exceptions import ValidationError
from django.core.validators import RegexValidator
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers


class FullMatchRegexValidator(RegexValidator):
    """``RegexValidator`` that needs the whole value to match (``re.fullmatch``).

    ``RegexValidator`` searches, so ``^…$`` accepts a trailing newline; this one does
    not. The pattern keeps its ``^…$`` form, which OpenAPI (ECMA regex) reads the same way.
    """

    def __call__(self, value):
        matched = self.regex.fullmatch(str(value)) is not None
        if matched == self.inverse_match:
            raise ValidationError(self.message, code=self.code, params={"value": value})


class FullRegexField(serializers.CharField):
    """A string that must match ``regex`` entirely; whitespace is never trimmed."""

    default_error_messages = {"invalid": "This value does not match the required pattern."}

    def __init__(self, regex, **kwargs):
        kwargs.setdefault("trim_whitespace", False)
        super().__init__(**kwargs)
        self.validators.append(
            FullMatchRegexValidator(regex, message=self.error_messages["invalid"])
        )


class StrictBooleanField(serializers.BooleanField):
    """Only JSON ``true``/``false`` (no "yes", 1 or "true" strings)."""

    def to_internal_value(self, data):
        if isinstance(data, bool):
            return data
        self.fail("invalid", input=data)
        return None  # unreachable: fail() raises


class StrictQuerySerializer(serializers.Serializer):
    """Query-string parameters where an empty value is an error, not an omission.

    DRF treats ``?status=`` as if ``status`` were absent (an HTML-form habit); the API's
    schema says an empty value is invalid, so the API refuses it.
    """

    def to_internal_value(self, data):
        for name in self.fields:
            if hasattr(data, "getlist") and name in data and "" in data.getlist(name):
                raise serializers.ValidationError({name: ["This field may not be blank."]})
        return super().to_internal_value(data)


@extend_schema_field(OpenApiTypes.OBJECT)
class JsonObjectField(serializers.JSONField):
    """A JSON object (documented as one) passed through to a service's own checks."""

    def to_internal_value(self, data):
        value = super().to_internal_value(data)
        if not isinstance(value, dict):
            raise serializers.ValidationError("must be a JSON object")
        return value
