import type { Messages } from "../messages.js"

/** Turkish. */
const messages: Messages = {
  tabPost: "Geri bildirim ver",
  tabUpdates: "Yenilikler",
  tabs: "Geri bildirim",
  formTitle: "Neye ihtiyacınız olduğunu bize anlatın",
  board: "Pano",
  loadingBoards: "Panolar yükleniyor…",
  noBoards: "Henüz herkese açık bir pano yok.",
  boardsFailed: "Panolar yüklenemedi.",
  retry: "Tekrar dene",
  title: "Başlık",
  details: "Ayrıntılar (isteğe bağlı)",
  submit: "Geri bildirim gönder",
  sending: "Gönderiliyor…",
  similar: { one: "Benzer bir gönderi zaten var", other: "{count} benzer gönderi zaten var" },
  newTab: "(yeni sekmede açılır)",
  thanks: "Teşekkürler! “{title}” başlıklı geri bildiriminiz yayınlandı.",
  sendMore: "Başka geri bildirim gönder",
  pickBoard: "Bir pano seçin.",
  titleRequired: "Lütfen geri bildiriminize bir başlık verin.",
  fieldInvalid: "Lütfen bu alanı kontrol edin.",
  loading: "Yükleniyor…",
  nothingNew: "Henüz yenilik yok.",
  updatesFailed: "Yenilikler yüklenemedi.",
  unreachable: "Bu sayfadan geri bildirim hizmetine ulaşılamıyor.",
  busy: {
    one: "Geri bildirim hizmeti şu anda yoğun. Lütfen {seconds} saniye sonra tekrar deneyin.",
    other: "Geri bildirim hizmeti şu anda yoğun. Lütfen {seconds} saniye sonra tekrar deneyin."
  },
  unauthorized: "Oturumunuz doğrulanamadı. Sayfayı yenileyip tekrar deneyin.",
  notFound: "Bu pano artık yok. Sayfayı yenileyip başka bir pano seçin.",
  checkForm: "Lütfen formu kontrol edin.",
  failed: "Bizim tarafımızda bir sorun oluştu. Lütfen tekrar deneyin.",
  launcher: "Geri bildirim",
  charsLeft: { one: "{count} karakter kaldı", other: "{count} karakter kaldı" },
  tooLong: { one: "En fazla {count} karakter.", other: "En fazla {count} karakter." },
  unavailable: "Bu sayfada geri bildirim kullanılamıyor.",
  viewPost: "Gönderinizi görüntüleyin"
}
export default messages
