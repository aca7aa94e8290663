import type { Messages } from "../messages.js"

/** Spanish. */
const messages: Messages = {
  tabPost: "Danos tu opinión",
  tabUpdates: "Novedades",
  tabs: "Comentarios",
  formTitle: "Cuéntanos qué necesitas",
  board: "Tablero",
  loadingBoards: "Cargando tableros…",
  noBoards: "Aún no hay ningún tablero público.",
  boardsFailed: "No se pudieron cargar los tableros.",
  retry: "Reintentar",
  title: "Título",
  details: "Detalles (opcional)",
  submit: "Enviar comentarios",
  sending: "Enviando…",
  similar: { one: "Ya existe una publicación similar", many: "Ya existen {count} de publicaciones similares", other: "Ya existen {count} publicaciones similares" },
  newTab: "(se abre en una pestaña nueva)",
  thanks: "¡Gracias! Tu comentario «{title}» se ha publicado.",
  sendMore: "Enviar más comentarios",
  pickBoard: "Elige un tablero.",
  titleRequired: "Ponle un título a tu comentario.",
  fieldInvalid: "Revisa este campo.",
  loading: "Cargando…",
  nothingNew: "Aún no hay novedades.",
  updatesFailed: "No se pudieron cargar las novedades.",
  unreachable: "No se puede conectar con el servicio de comentarios desde esta página.",
  busy: { one: "El servicio de comentarios está saturado. Vuelve a intentarlo en {seconds} segundo.", many: "El servicio de comentarios está saturado. Vuelve a intentarlo en {seconds} de segundos.", other: "El servicio de comentarios está saturado. Vuelve a intentarlo en {seconds} segundos." },
  unauthorized: "No se pudo verificar tu inicio de sesión. Recarga la página y vuelve a intentarlo.",
  notFound: "Este tablero ya no existe. Recarga la página y elige otro.",
  checkForm: "Revisa el formulario.",
  failed: "Algo salió mal por nuestra parte. Vuelve a intentarlo."
}
export default messages
