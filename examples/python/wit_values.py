"""Values at the component boundary in one JSON form, both ways, for wasmtime-py.

The form (see tests/conformance/cases.json): records are dicts keyed by WIT field names,
option none is None, variants and results are {"tag": case, "val": payload}, enums are their
case names, tuples are lists.
"""

from wasmtime.component import (
    ListType, OptionType, Record, RecordType, ResultType, TupleType, Variant, VariantType,
)


def record(**fields):
    """A WIT record: Python names with '_' become WIT names with '-'."""
    r = Record()
    for name, value in fields.items():
        setattr(r, name.replace("_", "-"), value)
    return r


def cases_of(ty):
    return [("ok", ty.ok), ("err", ty.err)] if isinstance(ty, ResultType) else ty.cases


def classes(ty):
    found = set()
    if ty is None:
        found.add(object)
    else:
        ty.add_classes(found)
    return found


def tagged(cases):
    """wasmtime-py passes a variant as `Variant` only when its cases' Python types overlap."""
    seen = set()
    for _, ty in cases:
        if classes(ty) & seen:
            return True
        seen |= classes(ty)
    return False


def is_case(ty, value):
    """Whether an untagged variant's `value` is of the case whose payload type is `ty`."""
    return value is None if ty is None else isinstance(value, tuple(classes(ty)))


def to_wit(ty, value):
    """A JSON-form value as wasmtime-py wants a value of type `ty`."""
    if isinstance(ty, RecordType):
        r = Record()
        for name, field in ty.fields:
            setattr(r, name, to_wit(field, value[name]))
        return r
    if isinstance(ty, OptionType):
        return None if value is None else to_wit(ty.payload, value)
    if isinstance(ty, ListType):
        return [to_wit(ty.element, v) for v in value]
    if isinstance(ty, (VariantType, ResultType)):
        cases = cases_of(ty)
        case = dict(cases)[value["tag"]]
        payload = None if case is None else to_wit(case, value.get("val"))
        return Variant(value["tag"], payload) if tagged(cases) else payload
    return value


def to_json(ty, value):
    """A value of type `ty` from wasmtime-py in the JSON form."""
    if isinstance(ty, RecordType):
        return {name: to_json(field, getattr(value, name)) for name, field in ty.fields}
    if isinstance(ty, OptionType):
        return None if value is None else to_json(ty.payload, value)
    if isinstance(ty, ListType):
        return [to_json(ty.element, v) for v in value]
    if isinstance(ty, TupleType):
        return [to_json(t, v) for t, v in zip(ty.elements, value)]
    if isinstance(ty, (VariantType, ResultType)):
        cases = cases_of(ty)
        if tagged(cases):
            tag, payload = value.tag, value.payload
        else:
            tag, payload = next((n, value) for n, t in cases if is_case(t, value))
        case = dict(cases)[tag]
        return {"tag": tag} if case is None else {"tag": tag, "val": to_json(case, payload)}
    return value  # strings, numbers, booleans and enum case names are themselves
