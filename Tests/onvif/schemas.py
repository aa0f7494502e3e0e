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


def validator(wsdl_dir):
    """A function taking a response envelope's bytes: None when its body's element is valid,
    else the schema's first complaints."""
    work = Path(tempfile.mkdtemp(prefix="vf-onvif-xsd-")) / "wsdl"
    shutil.copytree(wsdl_dir, work)
    imports = []
    for name in SERVICES:
        doc = etree.parse(str(work / (name + ".wsdl")))
        for i, schema in enumerate(doc.iter("{%s}schema" % XS)):
            nsmap = {k: v for k, v in {**doc.getroot().nsmap, **schema.nsmap}.items() if k}
            copy = etree.Element(schema.tag, nsmap=nsmap)
            for k, v in schema.attrib.items():
                copy.set(k, v)
            for child in schema:
                copy.append(child)
            out = "%s-%d.xsd" % (name, i)
            etree.ElementTree(copy).write(str(work / out))
            imports.append((schema.get("targetNamespace"), out))
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
