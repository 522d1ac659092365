"""A mypy plugin: ``body.get("key")`` on a TypedDict that names no such key is an error.

mypy checks the key of ``body["key"]`` against the TypedDict, but accepts any key in
``body.get("key")`` (a TypedDict value may carry more keys than its class names) and types the
result ``object``. The engine reads most optional-looking fields with ``.get``, so without this
check a misspelt field name would pass unnoticed. pyproject.toml loads the plugin for every run
of mypy on the project.
"""

from __future__ import annotations

from collections.abc import Callable

from mypy.errorcodes import TYPEDDICT_ITEM
from mypy.plugin import MethodContext, Plugin
from mypy.plugins.default import typed_dict_get_callback
from mypy.typeops import try_getting_str_literals
from mypy.types import Type, TypedDictType


def _checked_get(ctx: MethodContext) -> Type:
    td = ctx.type
    if isinstance(td, TypedDictType) and ctx.args and len(ctx.args[0]) == 1:
        keys = try_getting_str_literals(ctx.args[0][0], ctx.arg_types[0][0]) or []
        for key in keys:
            if key not in td.items:
                ctx.api.fail(
                    f'TypedDict "{td.fallback.type.name}" has no key "{key}"',
                    ctx.context,
                    code=TYPEDDICT_ITEM,
                )
    # The default plugin still infers the precise value type.
    return typed_dict_get_callback(ctx)


class TypedDictGetPlugin(Plugin):
    """Adds the key check to ``Mapping.get`` calls on TypedDicts."""

    def get_method_hook(self, fullname: str) -> Callable[[MethodContext], Type] | None:
        """The checking hook for ``get``; None (the default behaviour) for anything else."""
        if fullname == "typing.Mapping.get":
            return _checked_get
        return None


def plugin(version: str) -> type[Plugin]:
    """The entry point mypy calls."""
    return TypedDictGetPlugin
