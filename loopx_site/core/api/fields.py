"""Serializer fields shared by every app's API."""

from django.core.exceptions import ValidationError
from django.core.validators import RegexValidator
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
