#include "test/kube/pem.h"

#include <openssl/bio.h>
#include <openssl/buffer.h>
#include <openssl/ec.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/x509.h>

#include <memory>

namespace ayatori::kube::testing {
namespace {

std::string BioString(BIO* bio) {
  BUF_MEM* mem = nullptr;
  BIO_get_mem_ptr(bio, &mem);
  return std::string(mem->data, mem->length);
}

}  // namespace

PemPair MakeSelfSigned(const std::string& cn) {
  std::unique_ptr<EVP_PKEY, decltype(&EVP_PKEY_free)> key(EVP_EC_gen("P-256"), &EVP_PKEY_free);
  std::unique_ptr<X509, decltype(&X509_free)> cert(X509_new(), &X509_free);
  X509_set_version(cert.get(), 2);
  ASN1_INTEGER_set(X509_get_serialNumber(cert.get()), 1);
  X509_gmtime_adj(X509_getm_notBefore(cert.get()), 0);
  X509_gmtime_adj(X509_getm_notAfter(cert.get()), 3600);
  X509_set_pubkey(cert.get(), key.get());
  X509_NAME* name = X509_get_subject_name(cert.get());
  X509_NAME_add_entry_by_txt(name, "CN", MBSTRING_ASC,
                             reinterpret_cast<const unsigned char*>(cn.c_str()), -1, -1, 0);
  X509_set_issuer_name(cert.get(), name);
  X509_sign(cert.get(), key.get(), EVP_sha256());

  PemPair out;
  std::unique_ptr<BIO, decltype(&BIO_free)> cb(BIO_new(BIO_s_mem()), &BIO_free);
  PEM_write_bio_X509(cb.get(), cert.get());
  out.cert = BioString(cb.get());
  std::unique_ptr<BIO, decltype(&BIO_free)> kb(BIO_new(BIO_s_mem()), &BIO_free);
  PEM_write_bio_PrivateKey(kb.get(), key.get(), nullptr, nullptr, 0, nullptr, nullptr);
  out.key = BioString(kb.get());
  return out;
}

}  // namespace ayatori::kube::testing
